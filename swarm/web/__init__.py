"""`swarm web`: the team in a browser, live, with the requests waiting for a person answered from
the page: access.py (the tokens, their file, the checks on every request, failed-token limits),
teams.py (which teams a server shows: one, or every team under the config root; a feed each),
state.py (the team as the page's JSON, from `swarm watch`'s snapshot), feed.py (one thread woken
by the team's watcher, publishing each new state to every open event stream), costs.py (the
team's cost over time, a ring of samples), app.py (the starlette routes and the checks before
each), responses.py (the headers of every response, which error gets which status),
actions.py (a message sent, a task added, a member stopped), threads.py (a member's messages
as a thread, its log), server.py (the address, TLS, uvicorn), static/ (the one page: HTML, CSS
and vanilla JS, no build step)."""

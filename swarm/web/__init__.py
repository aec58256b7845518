"""`swarm web`: the team in a browser, live, with the requests waiting for a person answered from
the page: access.py (the tokens, their file, the checks on every request, failed-token limits),
state.py (the team as the page's JSON, from `swarm watch`'s snapshot), feed.py (one thread woken
by the team's watcher, publishing each new state to every open event stream), app.py (the
starlette routes: the page, the state, the event stream, the answers), server.py (the address,
TLS, uvicorn), static/ (the one page: HTML, CSS and vanilla JS, no build step)."""

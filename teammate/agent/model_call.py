"""One model request in flight, on a thread of its own.

The agent's own thread hands the request to `PendingCall` and waits for it through its team link
(`TeamLink.watch`): a teammate keeps answering its inbox meanwhile, so a shutdown request is
honoured in the middle of a long answer (the call is abandoned: its stream closed); a sub-agent
stops when it is told to. What must follow the request's sending (the caller's bookkeeping,
`ModelRequest.on_sent`) still runs on the agent's own thread: `poll`, from its waits.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace

from teammate.api.model import Abort, Model, ModelError, ModelReply, ModelRequest


class PendingCall:
    def __init__(self, model: Model, request: ModelRequest) -> None:
        self.abort = Abort()
        self._on_sent = request.on_sent
        self._request: ModelRequest | None = replace(request, on_sent=self._sent, abort=self.abort)
        self._model: Model | None = model
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._sent_flag = False
        self._settled = False
        self._wakers: list[Callable[[], None]] = []
        self._reply: ModelReply | None = None
        self._error: BaseException | None = None

    def start(self) -> PendingCall:
        threading.Thread(target=self._run, name="model-call", daemon=True).start()
        return self

    def _run(self) -> None:
        request, model = self._request, self._model
        assert request is not None and model is not None
        try:
            self._reply = model.complete(request)
        except ModelError as exc:  # handed to the agent's thread, which raises it
            self._error = exc.with_traceback(None)  # its frames hold the request
        except BaseException as exc:  # a bug: raised with where it happened
            self._error = exc
        finally:
            # no cycle keeps the request (and the stream holding its bytes) alive until the
            # collector's next full pass: a long job's requests are large
            self._request = self._model = None
            del request, model
            self.abort.release()
            self._done.set()
            self._wake()

    def _sent(self) -> None:
        with self._lock:
            self._sent_flag = True
        self._wake()

    def _wake(self) -> None:
        with self._lock:
            wakers = list(self._wakers)
        for waker in wakers:
            waker()

    # the agent's thread

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def on_change(self, waker: Callable[[], None]) -> None:
        """Call `waker` (from the call's thread) when the request is sent and when it ends."""
        with self._lock:
            self._wakers.append(waker)
        if self._done.is_set():
            waker()

    def poll(self) -> None:
        """Run the request's `on_sent` once it has been sent (on the caller's thread)."""
        with self._lock:
            due = self._sent_flag and not self._settled
            self._settled = self._settled or due
        if due and self._on_sent is not None:
            self._on_sent()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait up to `timeout` seconds (None: until it ends); True if it has ended."""
        ended = self._done.wait(timeout)
        self.poll()
        return ended

    def result(self) -> ModelReply:
        """The reply, or the call's error raised (only once it has ended)."""
        self.wait()
        if self._error is not None:
            raise self._error
        assert self._reply is not None
        return self._reply

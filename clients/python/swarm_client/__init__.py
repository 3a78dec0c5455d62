"""swarm_client: stream text from a swarm ingress (`swarm proxy`) over its
PETALS-compatible websocket API at /api/v2/generate.

The protocol is chat.petals.dev's (https://github.com/petals-infra/chat.petals.dev):
one websocket per inference session; first {"type": "open_inference_session",
"model", "max_length"}, then {"type": "generate", ...} messages, each answered
by one or more {"ok", "outputs", "stop", "token_count"} replies, or
{"ok": false, "traceback"}.

    from swarm_client import SwarmClient

    client = SwarmClient("ws://127.0.0.1:8000", model="stories260K")
    for piece in client.stream("Once upon a time", max_new_tokens=50):
        print(piece, end="", flush=True)

Uses the `websockets` package (Debian: python3-websockets) and asyncio.
"""

import asyncio
import json
from typing import AsyncIterator, Iterator, List, Optional

import websockets

__all__ = ["SwarmClient", "Session", "SwarmError", "GENERATE_PATH"]

GENERATE_PATH = "/api/v2/generate"

_WS_MAJOR = int(websockets.__version__.split(".")[0])


class SwarmError(Exception):
    """The ingress answered {"ok": false, "traceback": ...}; str() is the traceback."""


def _ws_url(url: str) -> str:
    if url.startswith("http://"):
        url = "ws://" + url[len("http://"):]
    elif url.startswith("https://"):
        url = "wss://" + url[len("https://"):]
    elif not url.startswith(("ws://", "wss://")):
        raise ValueError(f"url {url!r}: want ws://HOST:PORT or http://HOST:PORT")
    url = url.rstrip("/")
    return url if url.endswith(GENERATE_PATH) else url + GENERATE_PATH


class Session:
    """One inference session: its attention caches (or replica context) live
    as long as the websocket; each generate() continues the text."""

    def __init__(self, ws):
        self._ws = ws

    async def _reply(self) -> dict:
        reply = json.loads(await self._ws.recv())
        if not reply.get("ok"):
            raise SwarmError(reply.get("traceback", "unknown error"))
        return reply

    async def generate(
        self,
        inputs: Optional[str] = None,
        max_new_tokens: int = 64,
        do_sample: bool = False,
        temperature: float = 1.0,
        top_p: Optional[float] = None,
        top_k: Optional[int] = None,
        repetition_penalty: Optional[float] = None,
        stop_sequence: Optional[str] = None,
        extra_stop_sequences: Optional[List[str]] = None,
        seed: Optional[int] = None,
    ) -> AsyncIterator[str]:
        """Add `inputs` (None continues) and yield the generated text piece by
        piece as soon as each token arrives.

        Without stop_sequence it sends one generate of max_new_tokens=1 per
        token, up to max_new_tokens of them, and ends early when the model
        ends the text. With stop_sequence the server streams tokens until the
        text ends with it (included in the output, as PETALS does), up to the
        session's max_length."""
        params = {"type": "generate", "do_sample": 1 if do_sample else 0}
        if do_sample:
            params["temperature"] = temperature
        for key, value in (("top_p", top_p), ("top_k", top_k), ("repetition_penalty", repetition_penalty), ("seed", seed)):
            if value is not None:
                params[key] = value
        if stop_sequence is not None:
            msg = dict(params, inputs=inputs, max_new_tokens=1, stop_sequence=stop_sequence)
            if extra_stop_sequences:
                msg["extra_stop_sequences"] = extra_stop_sequences
            await self._ws.send(json.dumps(msg))
            while True:
                reply = await self._reply()
                if reply.get("outputs"):
                    yield reply["outputs"]
                if reply.get("stop"):
                    return
        for i in range(max_new_tokens):
            msg = dict(params, max_new_tokens=1)
            if i == 0 and inputs is not None:
                msg["inputs"] = inputs
            await self._ws.send(json.dumps(msg))
            reply = await self._reply()
            if reply.get("outputs"):
                yield reply["outputs"]
            if reply.get("token_count", 1) == 0:
                return  # the model ended the text


class SwarmClient:
    """A client of one ingress.

    url: ws://HOST:PORT or http://HOST:PORT of `swarm proxy` (the path
    /api/v2/generate is added); model: the model id (None: the ingress's only
    model); api_key: sent as "Authorization: Bearer KEY" when the ingress
    requires keys; providers: a trusted-provider allowlist
    (X-Swarm-Providers)."""

    def __init__(self, url: str, model: Optional[str] = None, api_key: Optional[str] = None,
                 providers: Optional[List[str]] = None):
        self.url = _ws_url(url)
        self.model = model
        self.headers = {}
        if api_key:
            self.headers["Authorization"] = f"Bearer {api_key}"
        if providers is not None:
            self.headers["X-Swarm-Providers"] = ",".join(providers)

    def session(self, max_length: int = 512) -> "_SessionContext":
        """async with client.session(max_length) as s: ... -- an inference
        session of at most max_length tokens (inputs and outputs together)."""
        return _SessionContext(self, max_length)

    async def astream(self, inputs: str = "", max_new_tokens: int = 64, max_length: int = 512,
                      **kwargs) -> AsyncIterator[str]:
        """Open a session, generate after inputs and yield text pieces as they
        arrive (see Session.generate for the keyword arguments)."""
        async with self.session(max_length) as s:
            async for piece in s.generate(inputs, max_new_tokens=max_new_tokens, **kwargs):
                yield piece

    def stream(self, inputs: str = "", max_new_tokens: int = 64, max_length: int = 512,
               **kwargs) -> Iterator[str]:
        """The synchronous streaming iterator over astream()."""
        loop = asyncio.new_event_loop()
        agen = self.astream(inputs, max_new_tokens=max_new_tokens, max_length=max_length, **kwargs)
        try:
            while True:
                try:
                    yield loop.run_until_complete(agen.__anext__())
                except StopAsyncIteration:
                    return
        finally:
            loop.run_until_complete(agen.aclose())
            loop.close()

    def generate(self, inputs: str = "", max_new_tokens: int = 64, max_length: int = 512, **kwargs) -> str:
        """The whole generated text."""
        return "".join(self.stream(inputs, max_new_tokens=max_new_tokens, max_length=max_length, **kwargs))


class _SessionContext:
    def __init__(self, client: SwarmClient, max_length: int):
        self._client = client
        self._max_length = max_length
        self._ws = None

    async def __aenter__(self) -> Session:
        kw = {"additional_headers" if _WS_MAJOR >= 14 else "extra_headers": self._client.headers}
        self._ws = await websockets.connect(self._client.url, max_size=None, **kw)
        msg = {"type": "open_inference_session", "max_length": self._max_length}
        if self._client.model is not None:
            msg["model"] = self._client.model
        await self._ws.send(json.dumps(msg))
        reply = json.loads(await self._ws.recv())
        if not reply.get("ok"):
            await self._ws.close()
            raise SwarmError(reply.get("traceback", "unknown error"))
        return Session(self._ws)

    async def __aexit__(self, *exc):
        await self._ws.close()

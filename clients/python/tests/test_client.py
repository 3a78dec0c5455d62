import asyncio

import pytest

from swarm_client import SwarmClient, SwarmError


def test_stream_reference(proxy_url, reference_text):
    """200 greedy tokens from an empty input, streamed token by token over
    the websocket API, are REFERENCE.md section 2's text."""
    client = SwarmClient(proxy_url, model="stories260K")
    pieces = list(client.stream("", max_new_tokens=200, max_length=200))
    assert "".join(pieces) == reference_text
    assert len(pieces) == 200


def test_async_stream_stop_sequence(proxy_url, reference_text):
    """With a stop sequence the server streams until the text ends with it."""
    stop = "didn't know what to do."
    want = reference_text[: reference_text.index(stop) + len(stop)]

    async def run():
        client = SwarmClient(proxy_url)
        return [p async for p in client.astream("", max_length=300, stop_sequence=stop)]

    pieces = asyncio.run(run())
    assert "".join(pieces) == want
    assert len(pieces) > 40


def test_session_continues(proxy_url, reference_text):
    """Two generate calls in one session continue the same text."""

    async def run():
        client = SwarmClient(proxy_url, model="stories260K")
        async with client.session(max_length=100) as s:
            a = "".join([p async for p in s.generate("", max_new_tokens=25)])
            b = "".join([p async for p in s.generate(None, max_new_tokens=25)])
        return a + b

    text = asyncio.run(run())
    assert reference_text.startswith(text)
    assert len(text) > 80


def test_errors(proxy_url):
    with pytest.raises(SwarmError, match="unknown model"):
        SwarmClient(proxy_url, model="bloom").generate("", max_new_tokens=1)
    with pytest.raises(SwarmError, match="Maximum length exceeded"):
        SwarmClient(proxy_url).generate("", max_new_tokens=20, max_length=10)
    with pytest.raises(ValueError, match="want ws://HOST:PORT"):
        SwarmClient("ftp://x")

import os
import re

import pytest


@pytest.fixture(scope="session")
def proxy_url():
    url = os.environ.get("SWARM_PROXY_URL")
    if not url:
        pytest.skip("SWARM_PROXY_URL is not set: run these tests through "
                    "`go test ./cmd/swarm -run TestPythonClient`, which starts a swarm and the proxy")
    return url


@pytest.fixture(scope="session")
def reference_text():
    """Section 2 of stories260K's REFERENCE.md (llama2.c's 200 greedy tokens)."""
    path = os.environ.get("SWARM_REFERENCE")
    if not path:
        pytest.skip("SWARM_REFERENCE (the path of stories260K/REFERENCE.md) is not set")
    with open(path, encoding="utf-8") as f:
        raw = f.read()
    m = re.search(r"i\.e\. this text \(200 generated tokens.*?```\n(.*?)\n```", raw, re.S)
    assert m, "section 2 text not found in REFERENCE.md"
    return m.group(1)

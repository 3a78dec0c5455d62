// Package hub finds a model's files on this machine or downloads them once
// from the Hugging Face hub: the default model of `swarm demo`
// (stories260K) comes from here. Resolve looks in a local models directory
// ($SWARM_MODELS, or ../shared/models), then in the user cache directory,
// and only then downloads into the cache, checking each file's size and
// SHA-256 before it appears under its final name.
//
// Download URLs follow the hub's resolve scheme,
// {endpoint}/{repo}/resolve/{revision}/{path}
// (https://huggingface.co/docs/huggingface_hub/guides/download); the
// endpoint defaults to https://huggingface.co and honours HF_ENDPOINT
// through OptionsFromEnv.
//
// ResolveRepo does the same for any repository reference
// ORG/REPO[@REVISION][:FILE] (`swarm serve --model`): it pins the
// revision to its commit ({endpoint}/api/models/{repo}/revision/{revision}),
// lists the repository at that commit (.../tree/{commit}), picks a
// GGUF file or the safetensors layout, downloads the small files whole and
// only the headers of the weights files, and returns a Snapshot whose Open
// gives files that download missing tensors by HTTP range request as they
// are read, into sparse cache files with a FILE.ranges sidecar listing the
// bytes present (resumable). Complete files are checked against their
// SHA-256; partial ones cannot be, so sizes and Content-Range are checked
// on every request. HF_TOKEN and HF_HUB_OFFLINE are honoured through
// OptionsFromEnv.
//
// This package must never import other packages of this repository: it only
// moves files, and blocks/ loads them.
package hub

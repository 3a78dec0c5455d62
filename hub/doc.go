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
// This package must never import other packages of this repository: it only
// moves files, and blocks/ loads them.
package hub

//go:build !nocuda

package main

// The CUDA backend registers itself (`swarm serve --device cuda`) and opens
// the GPU libraries with dlopen only when used. Linking it makes the Linux
// binary load through the system's dynamic loader (purego's dlopen needs
// libc) even with CGO_ENABLED=0; build with -tags nocuda for a fully
// static binary without it.
import _ "github.com/swarmllm/swarm/blocks/cuda"

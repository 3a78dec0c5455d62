package openai_test

import "github.com/swarmllm/swarm/swarm"

func swarmSpan(start, end int) swarm.Span { return swarm.Span{Start: start, End: end} }

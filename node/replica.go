package node

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/registry"
	"github.com/swarmllm/swarm/swarm"
)

// ReplicaInfo is what PublishReplica needs of a full-range replica;
// *fullrange.Server implements it.
type ReplicaInfo interface {
	// Info returns the replica's info document (FullRange, span [0, L),
	// tau, state).
	Info() api.Info
	// Changed is closed when Info's state changed (engine down or up).
	Changed() <-chan struct{}
}

// PublishReplica publishes a full-range replica in the registry and keeps
// its entry current until ctx ends or stop is called: SERVING while its
// info says serving, DOWN while its engine is unhealthy (each Changed
// republishes), LEFT when stopped. The entry's ID is the registry's node id
// and its one endpoint url, the base of the replica's OpenAI-compatible API
// that ingresses probe. stop waits for the watcher and announces LEFT
// (within leaveTimeout); it does not close reg.
//
// Errors: reg.Publish's for the first announcement.
func PublishReplica(ctx context.Context, reg *registry.Registry, rep ReplicaInfo, url string, log *slog.Logger) (stop func(), err error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	publish := func() error {
		info := rep.Info()
		si := info.ServerInfo
		si.ID, si.Endpoints = reg.ID(), []string{url}
		state := swarm.StateServing
		if info.State != api.StateServing {
			state = swarm.StateDown
		}
		return reg.Publish(si, state)
	}
	if err := publish(); err != nil {
		return nil, fmt.Errorf("node: publish the replica: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-rep.Changed():
				if err := publish(); err != nil {
					log.Warn("registry publish failed", "err", err)
				}
			}
		}
	}()
	return func() {
		cancel()
		<-done
		lctx, lcancel := context.WithTimeout(context.Background(), leaveTimeout)
		defer lcancel()
		if err := reg.Leave(lctx); err != nil {
			log.Warn("registry leave failed", "err", err)
		}
	}, nil
}

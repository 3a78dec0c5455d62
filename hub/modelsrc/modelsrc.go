// Package modelsrc turns a --model argument into what blocks.Open needs: a
// local path is used as it is; a Hugging Face repository reference
// (ORG/REPO[@REVISION][:FILE]) that is not a local path is resolved through
// package hub, whose files are downloaded by range as blocks reads them, so
// a server downloads only its span's tensors and a client only the head.
//
// It is the glue between hub (which moves bytes and never imports this
// repository) and blocks (which never makes a request). It must never
// import server, client, node, registry, ingress or cmd.
package modelsrc

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/hub"
)

// Model is a resolved --model argument.
type Model struct {
	// Path is what blocks.Open takes: the argument itself for a local
	// path, else the .gguf file or directory in the hub cache.
	Path string
	// Snapshot is the hub snapshot, nil for a local path.
	Snapshot *hub.Snapshot
}

// Resolve returns arg as a local model when a file or directory of that
// name exists, else resolves it as a hub reference with opts (see
// hub.ResolveRepo, which also says which downloads ctx bounds). An
// argument that is neither is an error naming both readings.
func Resolve(ctx context.Context, arg string, opts hub.Options) (Model, error) {
	if _, err := os.Stat(arg); err == nil {
		return Model{Path: arg}, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return Model{}, fmt.Errorf("model %s: %w", arg, err)
	}
	ref, err := hub.ParseRepoRef(arg)
	if err != nil {
		return Model{}, fmt.Errorf("model %q: no such file or directory, and not a hub repository: %w", arg, err)
	}
	snap, err := hub.ResolveRepo(ctx, ref, opts)
	if err != nil {
		return Model{}, fmt.Errorf("model %s: %w", ref, err)
	}
	return Model{Path: snap.Path, Snapshot: snap}, nil
}

// OpenFile is the function for blocks.WithOpenFile (and server.Config's
// OpenFile): it reads a hub model's weights through the snapshot, which
// downloads missing bytes; nil for a local model (blocks uses os.Open).
func (m Model) OpenFile() func(path string) (blocks.File, error) {
	if m.Snapshot == nil {
		return nil
	}
	return func(path string) (blocks.File, error) { return m.Snapshot.Open(path) }
}

// Options returns the blocks.Open options the model needs (none for a
// local one).
func (m Model) Options() []blocks.Option {
	if open := m.OpenFile(); open != nil {
		return []blocks.Option{blocks.WithOpenFile(open)}
	}
	return nil
}

package main

import (
	"context"
	"io"
	"os"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/hub"
	"github.com/swarmllm/swarm/hub/modelsrc"
)

// hubOptions are the hub settings of the environment (HF_ENDPOINT,
// HF_TOKEN, HF_HUB_OFFLINE), with a progress bar when errOut is a terminal.
func hubOptions(errOut io.Writer) hub.Options {
	f, _ := errOut.(*os.File)
	return hub.OptionsFromEnv(os.Getenv, f)
}

// resolveModel turns --model ORG/REPO[@REVISION][:FILE] into the hub
// cache's local path and an opener that downloads only what is read; a
// local path stays as it is.
func (o *generateOptions) resolveModel(ctx context.Context, errOut io.Writer) error {
	src, err := modelsrc.Resolve(ctx, o.model, hubOptions(errOut))
	if err != nil {
		return err
	}
	o.model, o.openFile = src.Path, src.OpenFile()
	return nil
}

// modelOptions are the blocks.Open options of --tokenizer and of a hub
// model's opener.
func (o generateOptions) modelOptions() []blocks.Option {
	var opts []blocks.Option
	if o.tokenizer != "" {
		opts = append(opts, blocks.WithTokenizer(o.tokenizer))
	}
	if o.openFile != nil {
		opts = append(opts, blocks.WithOpenFile(o.openFile))
	}
	return opts
}

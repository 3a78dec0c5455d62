package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/swarmllm/swarm/swarm/p2p"
)

// identityOptions are the flags of `swarm identity`.
type identityOptions struct {
	identity    string
	json        bool
	newSwarmKey string
}

const identityLong = `identity prints the libp2p peer id of the node whose private key is in
--identity FILE, creating a new Ed25519 key there (mode 0600) when the file
does not exist. A node started with the same --identity keeps this peer id,
so a script can form its bootstrap address before starting it:

  id=$(swarm identity --identity node1.key)
  swarm serve ... --identity node1.key --p2p-listen /ip4/0.0.0.0/tcp/4001 &
  swarm status --bootstrap /ip4/127.0.0.1/tcp/4001/p2p/$id

A file that exists but does not hold a key is an error; it is never
replaced.

--new-swarm-key FILE writes a fresh pre-shared key for a private swarm (the
/key/swarm/psk/1.0.0/ format; give the file to every member with
--swarm-key) and exits; it never overwrites an existing file.`

func newIdentityCmd() *cobra.Command {
	var o identityOptions
	cmd := &cobra.Command{
		Use:   "identity --identity FILE",
		Short: "Print a node's peer id, creating its key file if missing",
		Long:  identityLong,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("%w: unexpected argument %q (pass the key file with --identity)", errUsage, args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.newSwarmKey != "" {
				if err := p2p.WriteNewSwarmKey(o.newSwarmKey); err != nil {
					return err
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "wrote a new swarm key to %s\n", o.newSwarmKey)
				return nil
			}
			if o.identity == "" {
				return fmt.Errorf("%w: --identity FILE is required", errUsage)
			}
			return runIdentity(cmd, o)
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return fmt.Errorf("%w: %w", errUsage, err)
	})
	f := cmd.Flags()
	f.StringVar(&o.identity, "identity", "", "file holding the node's private key; created (Ed25519, mode 0600) if missing (required)")
	f.BoolVar(&o.json, "json", false, `print {"id": PEERID, "file": FILE, "created": BOOL} instead of the bare peer id`)
	f.StringVar(&o.newSwarmKey, "new-swarm-key", "", "write a new pre-shared swarm key to this file (mode 0600) and exit")
	return cmd
}

func runIdentity(cmd *cobra.Command, o identityOptions) error {
	key, created, err := p2p.LoadOrCreateIdentity(o.identity)
	if err != nil {
		return err
	}
	id, err := p2p.PeerIDFromKey(key)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if o.json {
		return json.NewEncoder(out).Encode(struct {
			ID      string `json:"id"`
			File    string `json:"file"`
			Created bool   `json:"created"`
		}{id.String(), o.identity, created})
	}
	if created {
		fmt.Fprintf(cmd.ErrOrStderr(), "created a new identity in %s\n", o.identity)
	}
	_, err = fmt.Fprintln(out, id.String())
	return err
}

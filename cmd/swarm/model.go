package main

import "github.com/spf13/cobra"

func newModelCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "model",
		Short: "model (not implemented yet)",
		RunE: func(cmd *cobra.Command, args []string) error {
			return errNotImplemented
		},
	}
}

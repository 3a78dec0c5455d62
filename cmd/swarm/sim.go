package main

import "github.com/spf13/cobra"

func newSimCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "sim",
		Short: "sim (not implemented yet)",
		RunE: func(cmd *cobra.Command, args []string) error {
			return errNotImplemented
		},
	}
}

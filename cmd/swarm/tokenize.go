package main

import "github.com/spf13/cobra"

func newTokenizeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "tokenize",
		Short: "tokenize (not implemented yet)",
		RunE: func(cmd *cobra.Command, args []string) error {
			return errNotImplemented
		},
	}
}

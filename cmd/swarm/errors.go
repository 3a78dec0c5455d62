package main

import "errors"

// errUsage marks a bad command line; main exits with status 2 for it.
var errUsage = errors.New("usage")

// errNotImplemented is returned by commands whose issue has not landed yet.
var errNotImplemented = errors.New("not implemented yet (see the open issues)")

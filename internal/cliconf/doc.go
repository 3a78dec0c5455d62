// Package cliconf gives every flag of the swarm CLI two more sources
// besides the command line: an environment variable SWARM_<FLAG> (the flag
// name in upper case with '-' as '_', e.g. SWARM_BOOTSTRAP,
// SWARM_P2P_LISTEN) and a YAML config file (--config FILE or
// SWARM_CONFIG) whose keys are flag names. The command line wins over the
// environment, which wins over the file, which wins over the flag's
// default. It also holds Bytes, a flag value taking human sizes ("8GiB",
// "500MB", "1000000").
//
// It must never import any other package of this repository: it knows
// cobra/pflag flags, not what they configure.
package cliconf

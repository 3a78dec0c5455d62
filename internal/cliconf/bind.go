package cliconf

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
)

// ErrBadConfig is returned (wrapped) for a config file or environment
// variable that does not parse or names no flag.
var ErrBadConfig = errors.New("cliconf: bad config")

// EnvPrefix is the prefix of the environment variables bound to flags.
const EnvPrefix = "SWARM_"

// ConfigFlag is the name of the root's persistent flag naming the config
// file; its environment variable is SWARM_CONFIG.
const ConfigFlag = "config"

// EnvName returns the environment variable bound to flag name:
// SWARM_ + upper case, '-' as '_' ("p2p-listen" -> "SWARM_P2P_LISTEN").
func EnvName(flag string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// Apply sets every flag of cmd that the command line did not set from the
// environment (getenv, os.Getenv outside tests), then from the config file
// file ("" for none): a flag set this way counts as given
// (Flags().Changed is true). Lists take comma-separated values in the
// environment and YAML sequences (or one comma-separated string) in the
// file. The flag named ConfigFlag and the help and version flags are left
// alone.
//
// Every key of the file must name a flag of some command under cmd's root
// (so that one file can configure serve, proxy and status together, and a
// misspelled key is an error rather than ignored). Errors wrap
// ErrBadConfig and name the variable or key.
func Apply(cmd *cobra.Command, file string, getenv func(string) string) error {
	values, err := readFile(file)
	if err != nil {
		return err
	}
	known := allFlagNames(cmd.Root())
	var keys []string
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !known[k] {
			return fmt.Errorf("%w: %s: key %q is not a flag of any swarm command (keys are flag names without --, e.g. bootstrap)", ErrBadConfig, file, k)
		}
	}
	var errs []error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Changed || skip(f.Name) {
			return
		}
		if v := getenv(EnvName(f.Name)); v != "" {
			if err := setAll(cmd.Flags(), f, splitEnv(f, v)); err != nil {
				errs = append(errs, fmt.Errorf("%w: $%s=%q: %w", ErrBadConfig, EnvName(f.Name), v, err))
			}
			return
		}
		raw, ok := values[f.Name]
		if !ok {
			return
		}
		items, err := fileValues(raw)
		if err == nil {
			err = setAll(cmd.Flags(), f, items)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: %s: %s: %w", ErrBadConfig, file, f.Name, err))
		}
	})
	return errors.Join(errs...)
}

func skip(name string) bool { return name == ConfigFlag || name == "help" || name == "version" }

// isList reports whether f takes several values (string slices, arrays).
func isList(f *pflag.Flag) bool {
	_, ok := f.Value.(pflag.SliceValue)
	return ok
}

// splitEnv splits a list flag's environment value at commas.
func splitEnv(f *pflag.Flag, v string) []string {
	if !isList(f) {
		return []string{v}
	}
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// setAll sets f to items: one Set per item (a list flag appends after its
// first), through the flag set so that the flag counts as changed.
func setAll(fs *pflag.FlagSet, f *pflag.Flag, items []string) error {
	if len(items) > 1 && !isList(f) {
		return fmt.Errorf("%d values for a flag that takes one", len(items))
	}
	for _, it := range items {
		if err := fs.Set(f.Name, it); err != nil {
			return err
		}
	}
	return nil
}

// fileValues turns a YAML value into flag strings: scalars as written,
// sequences item by item.
func fileValues(raw any) ([]string, error) {
	switch v := raw.(type) {
	case []any:
		out := make([]string, 0, len(v))
		for _, it := range v {
			s, err := scalar(it)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, nil
	default:
		s, err := scalar(v)
		if err != nil {
			return nil, err
		}
		return []string{s}, nil
	}
}

func scalar(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case bool:
		return strconv.FormatBool(v), nil
	case int:
		return strconv.Itoa(v), nil
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64), nil
	case nil:
		return "", nil
	}
	return "", fmt.Errorf("value %v (%T): want a string, number, boolean or a list of them", v, v)
}

// readFile parses the YAML mapping in file; "" gives none.
func readFile(file string) (map[string]any, error) {
	if file == "" {
		return nil, nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("%w: --config: %w", ErrBadConfig, err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(data, &values); err != nil {
		return nil, fmt.Errorf("%w: --config %s: %w; want a YAML mapping of flag names to values (e.g. bootstrap: [/dnsaddr/...])", ErrBadConfig, file, err)
	}
	return values, nil
}

// allFlagNames returns the flag names of every command in the tree.
func allFlagNames(root *cobra.Command) map[string]bool {
	names := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) { names[f.Name] = true })
		c.PersistentFlags().VisitAll(func(f *pflag.Flag) { names[f.Name] = true })
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return names
}

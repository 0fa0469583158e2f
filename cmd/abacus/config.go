package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"
)

// A config file holds the flags a user would otherwise repeat on every
// command or export: the server's URL, the CA file, a timeout, serve's
// store. It is a YAML mapping of flag names to values:
//
//	server: https://abacus.internal:7070
//	ca-file: /etc/abacus/ca.pem
//	timeout: 10s
//
// A flag on the command line wins over $ABACUS_<FLAG>, which wins over the
// file, which wins over the built-in default. A name no command has is an
// error (a typo would otherwise be ignored in silence); a name only some
// commands have applies to those.

// configFile is where the config comes from: --config, $ABACUS_CONFIG, or
// else config.yaml in $XDG_CONFIG_HOME/abacus (~/.config/abacus), used only
// if it exists. explicit says the user named it, so it must exist.
func (a *app) configFile(cmd *cobra.Command) (path string, explicit bool) {
	if f := cmd.Flags().Lookup("config"); f != nil && f.Changed {
		return f.Value.String(), true
	}
	if p := a.getenv(envName("config")); p != "" {
		return p, true
	}
	dir := a.getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home := a.getenv("HOME")
		if home == "" {
			return "", false
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "abacus", "config.yaml"), false
}

// loadConfig reads the config file into flag name → value, checking every
// name against the flags of every command under root.
func (a *app) loadConfig(cmd *cobra.Command) (map[string]string, string, error) {
	path, explicit := a.configFile(cmd)
	if path == "" {
		return nil, "", nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && !explicit {
		return nil, "", nil
	}
	if err != nil {
		return nil, path, usagef("config file: %v", err)
	}
	var raw map[string]any
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return nil, path, usagef("config file %s is not a YAML mapping of flag names to values: %s", path, oneLine(err.Error()))
	}
	known := allFlagNames(cmd.Root())
	values := make(map[string]string, len(raw))
	names := make([]string, 0, len(raw))
	for name := range raw {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		switch v := raw[name].(type) {
		case map[string]any, []any, nil:
			return nil, path, usagef("config file %s: %q must be a single value (a list flag takes a comma-separated string)", path, name)
		default:
			if !known[name] || noEnv[name] || name == "config" {
				return nil, path, usagef("config file %s: %q is not a flag any command takes from a config file; see 'abacus --help'", path, name)
			}
			values[name] = fmt.Sprint(v)
		}
	}
	return values, path, nil
}

// allFlagNames lists the flags of every command in the tree.
func allFlagNames(root *cobra.Command) map[string]bool {
	names := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, set := range []*pflag.FlagSet{c.LocalFlags(), c.PersistentFlags()} {
			set.VisitAll(func(f *pflag.Flag) { names[f.Name] = true })
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return names
}

// fromConfig sets flag f from the config file's value, if it has one.
func fromConfig(cmd *cobra.Command, f *pflag.Flag, values map[string]string, path string) error {
	v, ok := values[f.Name]
	if !ok {
		return nil
	}
	if err := cmd.Flags().Set(f.Name, v); err != nil {
		return usagef("invalid value %q for %q in config file %s: %v", v, f.Name, path, strings.TrimSpace(err.Error()))
	}
	return nil
}

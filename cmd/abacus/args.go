package main

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// protectNegativeNumbers lets "abacus counter add likes -3" mean a delta of
// -3. pflag would read "-3" as a shorthand flag, so positional arguments from
// the first negative number on are moved behind "--" (flags stay where they
// are, and positional order is kept). Values of flags that take one, as in
// "--request-id -3", are left alone.
func protectNegativeNumbers(root *cobra.Command, args []string) []string {
	cmd, _, err := root.Find(args)
	if err != nil {
		cmd = root
	}
	var out, tail []string
	moved := false
	for i := 0; i < len(args); i++ {
		arg := args[i]
		switch {
		case arg == "--":
			tail = append(tail, args[i+1:]...)
			i = len(args)
		case isNegativeNumber(arg):
			tail = append(tail, arg)
			moved = true
		case moved && !strings.HasPrefix(arg, "-"):
			tail = append(tail, arg)
		default:
			out = append(out, arg)
			if takesValue(cmd, arg) && i+1 < len(args) {
				i++
				out = append(out, args[i])
			}
		}
	}
	if len(tail) == 0 && len(out) == len(args) {
		return args
	}
	return append(append(out, "--"), tail...)
}

func isNegativeNumber(s string) bool {
	if len(s) < 2 || s[0] != '-' {
		return false
	}
	for _, c := range s[1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// takesValue reports whether arg is a flag (without "=value") whose value is
// the next argument.
func takesValue(cmd *cobra.Command, arg string) bool {
	if !strings.HasPrefix(arg, "-") || strings.Contains(arg, "=") || arg == "-" {
		return false
	}
	var f *pflag.Flag
	if name, ok := strings.CutPrefix(arg, "--"); ok {
		f = lookupFlag(cmd, func(fs *pflag.FlagSet) *pflag.Flag { return fs.Lookup(name) })
	} else if len(arg) == 2 {
		f = lookupFlag(cmd, func(fs *pflag.FlagSet) *pflag.Flag { return fs.ShorthandLookup(arg[1:]) })
	}
	return f != nil && f.NoOptDefVal == ""
}

func lookupFlag(cmd *cobra.Command, find func(*pflag.FlagSet) *pflag.Flag) *pflag.Flag {
	for c := cmd; c != nil; c = c.Parent() {
		if f := find(c.Flags()); f != nil {
			return f
		}
		if f := find(c.PersistentFlags()); f != nil {
			return f
		}
	}
	return nil
}

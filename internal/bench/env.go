package bench

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
)

// EnvPrefix starts the name of every environment variable surge reads.
const EnvPrefix = "SURGE_"

// EnvName is the environment variable for a flag: prefix plus the flag's
// name in upper snake case ("api-key" → "SURGE_API_KEY").
func EnvName(prefix, flag string) string {
	return prefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// DocumentEnv appends "(env NAME)" to the usage of every flag in fs, so
// --help tells where else each value may come from.
func DocumentEnv(fs *pflag.FlagSet, prefix string) {
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Name == "help" || strings.Contains(f.Usage, "(env ") {
			return
		}
		f.Usage += " (env " + EnvName(prefix, f.Name) + ")"
	})
}

// BindEnv sets every flag of fs that was not given on the command line
// from its environment variable, when that is set: flags win over the
// environment, which wins over defaults. lookup is os.LookupEnv outside
// tests.
func BindEnv(fs *pflag.FlagSet, prefix string, lookup func(string) (string, bool)) error {
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed || f.Name == "help" {
			return
		}
		name := EnvName(prefix, f.Name)
		v, ok := lookup(name)
		if !ok {
			return
		}
		if serr := fs.Set(f.Name, v); serr != nil {
			err = fmt.Errorf("%s=%q: %w", name, v, serr)
		}
	})
	return err
}

package release

import "flag"

// FlagTable is a markdown table of a command's flags, in name order: the
// flag (with its value's kind where it takes one), its default and its
// usage, from the FlagSet the command parses with, so the reference never
// lags the binary.
func FlagTable(fs *flag.FlagSet) string {
	var rows [][]string
	fs.VisitAll(func(f *flag.Flag) {
		kind, usage := flag.UnquoteUsage(f)
		name := "--" + f.Name
		if len(f.Name) == 1 {
			name = "-" + f.Name
		}
		if kind != "" {
			name += " " + kind
		}
		def := "—"
		if f.DefValue != "" {
			def = "`" + f.DefValue + "`"
		}
		rows = append(rows, []string{"`" + name + "`", def, cell(usage)})
	})
	return table([]string{"flag", "default", "meaning"}, rows)
}

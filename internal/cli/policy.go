package cli

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/configs"
	"github.com/toolhost/toolhost/internal/policy"
)

func newPolicyCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "policy", Short: "Work with tool policy files (configs/tools.json)"}
	cmd.AddCommand(newPolicyCheckCmd())
	return cmd
}

func newPolicyCheckCmd() *cobra.Command {
	var against string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "check FILE [--against CURRENT]",
		Short: "Validate a policy file and print what it would change",
		Long: "check parses FILE exactly as a running toolhost would on reload and prints what it changes versus the\n" +
			"current policy (the embedded default, or --against FILE): tools added or removed, permission, timeout,\n" +
			"retry and confirm changes, upstream servers, settings, and warnings (unknown permissions are denied,\n" +
			"retries on write tools are ignored). Exit 2 when FILE is invalid; a running toolhost would keep its\n" +
			"last good policy and log tool_policy_invalid with the same reason.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			next, err := readPolicy(args[0])
			if err != nil {
				return usageErr(err)
			}
			cur, err := policy.Parse(configs.ToolsJSON)
			curName := "the embedded default policy"
			if against != "" {
				cur, err = readPolicy(against)
				curName = against
			}
			if err != nil {
				return usageErr(fmt.Errorf("current policy: %w", err))
			}
			changes := policy.Diff(cur, next)
			w := cmd.OutOrStdout()
			if asJSON {
				for _, c := range changes {
					if err := writeJSONLine(w, c); err != nil {
						return err
					}
				}
				return nil
			}
			fmt.Fprintf(w, "%s is valid: %d tools, %d upstream servers\n", args[0], len(next.Tools), len(next.Upstream))
			if len(changes) == 0 {
				fmt.Fprintf(w, "no changes versus %s\n", curName)
				return nil
			}
			fmt.Fprintf(w, "changes versus %s:\n", curName)
			for _, c := range changes {
				fmt.Fprintln(w, "  "+c.String())
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&against, "against", "", "the policy in force to compare with (default: the embedded configs/tools.json)")
	cmd.Flags().StringVar(&against, "policy", "", "alias of --against, matching serve's --policy")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the changes as JSON lines")
	return cmd
}

func readPolicy(path string) (*policy.File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := policy.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

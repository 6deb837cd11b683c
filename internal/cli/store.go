package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/internal/store/filestore"
	storeopen "github.com/toolhost/toolhost/internal/store/open"
	"github.com/toolhost/toolhost/internal/store/pgstore"
)

func newStoreCmd() *cobra.Command {
	var sf stateFlags
	cmd := &cobra.Command{
		Use:   "store status|migrate|export --to DIR|import --from DIR|grant-decisions ROLE",
		Short: "Show, migrate, export or import a project's shared state (files or PostgreSQL)",
		Long: "The project's shared state (timeline, events, audit trail, bugs, agent states, confirmations) lives in\n" +
			"the project dir's files by default, or in a PostgreSQL database shared by several machines (--store\n" +
			"postgres://…, or TOOLHOST_STORE; --pid is the project's tenant key). status counts what the store holds\n" +
			"and checks its audit chain; migrate brings a database's schema up to date (every command does at start);\n" +
			"export --to DIR writes the state in the file store's layout into DIR; import --from DIR takes a project\n" +
			"dir's files into the store. Export then import (or the reverse) reproduces every record and a chain that\n" +
			"verifies.",
	}
	sf.register(cmd.PersistentFlags(), "; default: the current directory")
	cmd.AddCommand(&cobra.Command{
		Use:   "status",
		Short: "Say which store holds the project's state, what it holds, and whether its audit chain verifies",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := sf.resolve(true); err != nil {
				return err
			}
			st, err := sf.open(filestore.ReadWrite)
			if err != nil {
				return err
			}
			defer st.Close()
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "store: %s\n", st.Describe())
			if pg, ok := st.(*pgstore.Store); ok {
				s, err := pg.Schema(cmd.Context())
				if err != nil {
					return err
				}
				fmt.Fprintf(w, "schema: version %d (this toolhost writes %d)\n", s.Version, s.Want)
			}
			n, err := store.Copy(cmd.Context(), st, store.Discard())
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "holds: %s\n", n)
			v, err := st.Audit().Verify(cmd.Context())
			switch {
			case errors.Is(err, store.ErrNoTrail):
				fmt.Fprintln(w, "audit: no trail yet")
			case err != nil:
				return err
			case v.Problem != nil:
				fmt.Fprintf(w, "audit: the chain does not verify: %s (%s)\n", v.Problem.Detail, v.Problem.Kind)
				return &exitError{code: 1, err: errors.New("the audit chain does not verify; run toolhost audit verify")}
			default:
				fmt.Fprintf(w, "audit: %d rows verified, chain %s ends at seq %d\n", v.Rows, v.ChainID, v.LastSeq)
			}
			return nil
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "migrate",
		Short: "Bring a PostgreSQL store's schema up to date (under an advisory lock; a newer schema is refused)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := sf.resolve(true); err != nil {
				return err
			}
			if kind, _ := storeopen.KindOf(storeopen.SpecFrom(sf.store, os.Getenv)); kind != storeopen.KindPostgres {
				fmt.Fprintln(cmd.OutOrStdout(), "the file store has no schema to migrate")
				return nil
			}
			st, err := sf.open(filestore.ReadWrite)
			if err != nil {
				return err
			}
			defer st.Close()
			s, err := st.(*pgstore.Store).Schema(cmd.Context())
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "schema at version %d (%s)\n", s.Version, st.Describe())
			return nil
		},
	})
	var to string
	export := &cobra.Command{
		Use:   "export --to DIR",
		Short: "Write the project's state in the file store's layout into DIR (an empty directory)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if to == "" {
				return usageErr(errors.New("--to DIR is required"))
			}
			if err := sf.resolve(true); err != nil {
				return err
			}
			if err := os.MkdirAll(to, 0o755); err != nil {
				return err
			}
			st, err := sf.open(filestore.ReadWrite)
			if err != nil {
				return err
			}
			defer st.Close()
			x, err := filestore.NewExport(to)
			if err != nil {
				return usageErr(err)
			}
			n, err := store.Copy(cmd.Context(), st, x)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "exported %s from %s into %s\n", n, st.Describe(), to)
			return nil
		},
	}
	export.Flags().StringVar(&to, "to", "", "directory to write the state into (created; must hold no project state)")
	cmd.AddCommand(export)
	var from string
	imp := &cobra.Command{
		Use:   "import --from DIR",
		Short: "Take the state of a project dir's files (DIR) into the store (a PostgreSQL project with no state yet)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if from == "" {
				return usageErr(errors.New("--from DIR is required"))
			}
			if err := sf.resolve(true); err != nil {
				return err
			}
			dst, err := sf.open(filestore.ReadWrite)
			if err != nil {
				return err
			}
			defer dst.Close()
			pg, ok := dst.(*pgstore.Store)
			if !ok {
				return usageErr(errors.New("import takes files into a PostgreSQL store: give --store postgres://… (and --pid); between two dirs, export is the copy"))
			}
			src, err := filestore.Open(from, filestore.Options{})
			if err != nil {
				return usageErr(err)
			}
			defer src.Close()
			im, err := pg.NewImport(cmd.Context())
			if err != nil {
				return err
			}
			n, err := store.Copy(cmd.Context(), src, im)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "imported %s from %s into %s\n", n, from, dst.Describe())
			return nil
		},
	}
	imp.Flags().StringVar(&from, "from", "", "project dir (or export) whose files to take in")
	cmd.AddCommand(imp)
	cmd.AddCommand(&cobra.Command{
		Use:   "grant-decisions ROLE",
		Short: "Make ROLE a decisions-only role of the PostgreSQL store: it reads what the dashboard shows and writes the confirmations alone",
		Long: "grant-decisions revokes every privilege ROLE has on toolhost's tables and grants it what the dashboard and\n" +
			"`toolhost approve` need: reading the project's state and writing the confirmations. Give those commands a\n" +
			"--store that connects as ROLE and \"writes only decisions\" is the database's rule, whatever runs them.\n" +
			"Run it with the store's owner (the role that migrated it); ROLE must exist (CREATE ROLE name LOGIN\n" +
			"PASSWORD '…'). Run it again after upgrading toolhost: a newer schema's tables need the grant too.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := sf.resolve(true); err != nil {
				return err
			}
			if kind, _ := storeopen.KindOf(storeopen.SpecFrom(sf.store, os.Getenv)); kind != storeopen.KindPostgres {
				return usageErr(errors.New("grant-decisions is for a PostgreSQL store (--store postgres://…); the file store's dashboard writes only decisions by its door"))
			}
			st, err := sf.open(filestore.ReadWrite)
			if err != nil {
				return err
			}
			defer st.Close()
			if err := st.(*pgstore.Store).GrantDecisions(cmd.Context(), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s may now read the project state and write only the confirmations of %s\n", args[0], st.Describe())
			return nil
		},
	})
	return cmd
}

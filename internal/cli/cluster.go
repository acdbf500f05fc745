package cli

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/tpslab/tpslab/internal/cluster"
	"github.com/tpslab/tpslab/internal/exitcode"
)

func clusterCmd() *cobra.Command {
	c := &cobra.Command{Use: "cluster", Short: "A real local Kubernetes (control plane and kubelets with containerd) for tests, demos and laptops",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return exitcode.BadInputf("unknown command %q for %q, expected one of up, down, status", args[0], cmd.CommandPath())
			}
			return cmd.Help()
		}}
	var home string
	var nodes int
	needHome := func(verb string) error {
		if home == "" {
			return exitcode.BadInputf("cluster %s: --home is required", verb)
		}
		return nil
	}
	up := &cobra.Command{Use: "up --home DIR", Short: "Build (once) and start a local cluster; writes DIR/kubeconfig", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := needHome("up"); err != nil {
				return err
			}
			if nodes < 1 || nodes > cluster.MaxNodes {
				return exitcode.BadInputf("--nodes: %d, expected 1..%d", nodes, cluster.MaxNodes)
			}
			start := time.Now()
			st, err := cluster.Up(cmd.Context(), cluster.Options{Home: home, Nodes: nodes, Log: os.Stderr})
			if err != nil {
				return exitcode.Wrap(exitcode.TargetFailed, err)
			}
			fmt.Printf("cluster up: Kubernetes %s, %d node(s) ready in %s (building %s of it)\nkubeconfig: %s\nimage: %s\n",
				st.Kubernetes, len(st.Nodes), time.Since(start).Round(100*time.Millisecond), time.Duration(st.BuildSecs*float64(time.Second)).Round(100*time.Millisecond), st.Kubeconfig, st.Image)
			return nil
		}}
	up.Flags().IntVar(&nodes, "nodes", 2, "kubelets (nodes), each with its own containerd; node 2 and on in network namespaces of their own")
	down := &cobra.Command{Use: "down --home DIR", Short: "Stop the local cluster and remove every process, mount, namespace, route and rule it made", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := needHome("down"); err != nil {
				return err
			}
			st, err := cluster.Load(home)
			if err != nil {
				return exitcode.BadInputf("--home: %s holds no cluster (%v)", home, err)
			}
			if err := st.Down(os.Stderr); err != nil {
				return exitcode.Wrap(exitcode.TargetFailed, err)
			}
			if left := st.Leftovers(); len(left) > 0 {
				return exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("cluster down left: %v", left))
			}
			return nil
		}}
	status := &cobra.Command{Use: "status --home DIR", Short: "Show the local cluster's processes and nodes", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := needHome("status"); err != nil {
				return err
			}
			st, err := cluster.Load(home)
			if err != nil {
				return exitcode.BadInputf("--home: %s holds no cluster (%v)", home, err)
			}
			up, all := st.Running()
			fmt.Printf("cluster %s: Kubernetes %s, API %s, %d of %d processes running\nkubeconfig: %s\n", st.Home, st.Kubernetes, st.Server, up, all, st.Kubeconfig)
			nodes, err := cluster.NodeStatus(cmd.Context(), st.Kubeconfig)
			if err != nil {
				return exitcode.Wrap(exitcode.TargetFailed, err)
			}
			for _, n := range nodes {
				fmt.Println(n)
			}
			if up < all {
				return exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("%d of the cluster's processes are not running", all-up))
			}
			return nil
		}}
	for _, s := range []*cobra.Command{up, down, status} {
		s.Flags().StringVar(&home, "home", "", "the cluster's folder (state, certificates, logs, kubeconfig)")
	}
	c.AddCommand(up, down, status)
	return c
}

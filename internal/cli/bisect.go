package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tpslab/tpslab/internal/buildcache"
	"github.com/tpslab/tpslab/internal/campaign"
	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/kinds"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/runner"
	"github.com/tpslab/tpslab/internal/scenario"
)

func bisectCmd(reg *kinds.Registry) *cobra.Command {
	var so scenarioOpts
	var binaries []string
	var good, bad, build, repo, figure string
	var repeat int
	c := &cobra.Command{
		Use:   "bisect [SCENARIO.yaml] (--binaries A,B,C,… | --good REF --bad REF --build CMD)",
		Short: "Find the first build where a figure moved beyond noise",
		Long: `Runs the scenario on fresh networks of builds of the node program, in
order, to find the first one where a figure (committed TPS by default, or
--figure p99_commit) moved beyond noise. Each step runs the bracket's two
ends and its middle --repeat times each, interleaved, and compares them by
Welch's interval over the runs and compare's noise floor: a middle told
apart from the good end is bad, one told apart from the bad end is good,
one within noise of both stops the search and says so (it never guesses).
The first step also compares the ends: without a change between them there
is nothing to find.

The builds are --binaries in order (the first good), or each commit from
--good to --bad (git rev-list --first-parent) built with --build, run in a
worktree of that commit with $OUT the path the program goes to; builds are
cached by commit, and only the commits a step runs are built.`,
		Example: `  tpslab bisect --binaries ./v1/tpslab,./v2/tpslab,./v3/tpslab --duration 10s
  tpslab bisect --good v1.4.0 --bad main --build 'go build -o "$OUT" ./cmd/tpslab' --validators 1 --duration 10s`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if repeat < 2 {
				return exitcode.BadInputf("--repeat: %d, expected at least 2 (3 or more for intervals that tell builds apart)", repeat)
			}
			var fig report.Def
			for _, d := range report.Defs(nil) {
				if d.Name == figure && d.Compare {
					fig = d
				}
			}
			if fig.Name == "" {
				return exitcode.BadInputf("--figure: %q, expected committed_tps or p99_commit", figure)
			}
			sc, err := so.resolve(args)
			if err != nil {
				return err
			}
			if len(sc.Target.Endpoints) > 0 || sc.Target.NetHome != "" {
				return exitcode.BadInputf("target: bisect starts a fresh network of each build, expected no target.endpoints (--endpoint) or target.net_home (--net-home)")
			}
			if k, err := reg.Lookup(sc.Target.Kind); err != nil {
				return exitcode.Wrap(exitcode.BadInput, err)
			} else if _, ok := k.(kinds.Starter); !ok {
				return exitcode.BadInputf("target.kind: %s: tpslab starts no network of it, expected a kind it starts", k.Info().Name)
			}
			o := campaign.BisectOptions{Figure: fig, Repeat: repeat, Out: sc.Out, Log: os.Stderr,
				Run: func(ctx context.Context, rc scenario.Scenario, node string) error {
					return runQuiet(ctx, reg, rc, node, "bisect")
				}}
			if o.Out == "" {
				o.Out = runner.DefaultOut()
			}
			switch {
			case len(binaries) > 0 && (good != "" || bad != ""):
				return exitcode.BadInputf("--binaries with --good/--bad, expected one of them")
			case len(binaries) > 0:
				for _, b := range binaries {
					st, err := os.Stat(b)
					if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
						return exitcode.BadInputf("--binaries: %q is not an executable file, expected node programs in order", b)
					}
					o.Builds, o.Labels = append(o.Builds, b), append(o.Labels, filepath.Base(b))
				}
				if names := slices.Compact(slices.Sorted(slices.Values(o.Labels))); len(names) < len(o.Labels) {
					o.Labels = slices.Clone(o.Builds) // names alike: the paths tell them apart
				}
			case good != "" && bad != "":
				if build == "" {
					return exitcode.BadInputf("--build: empty, expected the command that builds a commit's node program into $OUT")
				}
				commits, err := commitRange(repo, good, bad)
				if err != nil {
					return err
				}
				for _, c := range commits {
					o.Builds, o.Labels = append(o.Builds, ""), append(o.Labels, c[:12])
				}
				o.Build = func(ctx context.Context, i int) (string, error) { return buildCommit(ctx, repo, commits[i], build) }
			default:
				return exitcode.BadInputf("builds: none, expected --binaries A,B,… or --good REF --bad REF --build CMD")
			}
			if len(o.Labels) < 2 {
				return exitcode.BadInputf("builds: %d, expected at least two in order (the first good)", len(o.Labels))
			}
			started := time.Now()
			s, err := campaign.Bisect(cmd.Context(), sc, o)
			s.TookS = time.Since(started).Round(time.Second).Seconds()
			if len(s.Steps) > 0 {
				if werr := report.WriteJSON(filepath.Join(o.Out, campaign.BisectFile), s); werr != nil {
					fmt.Fprintf(os.Stderr, "%s: %v\n", campaign.BisectFile, werr)
				}
				campaign.PrintBisect(os.Stdout, s)
				fmt.Fprintf(os.Stderr, "results: %s (%s, a folder of runs per step and build) in %s\n", o.Out, campaign.BisectFile, time.Duration(s.TookS)*time.Second)
			}
			return err
		},
	}
	so.register(c.Flags(), reg)
	f := c.Flags()
	f.StringSliceVar(&binaries, "binaries", nil, "node programs in order, the first good")
	f.StringVar(&good, "good", "", "a commit (any git ref) whose build is good")
	f.StringVar(&bad, "bad", "", "a later commit whose build is suspect")
	f.StringVar(&build, "build", "", "with --good/--bad: the shell command that builds a commit's node program into $OUT, run in a worktree of the commit")
	f.StringVar(&repo, "repo", ".", "with --good/--bad: the git repository")
	f.StringVar(&figure, "figure", "committed_tps", "the figure judged: committed_tps or p99_commit")
	f.IntVar(&repeat, "repeat", 3, "runs of each build a step, interleaved")
	setGroup(f, "bisect", "binaries", "good", "bad", "build", "repo", "figure", "repeat")
	groupedHelp(c)
	return c
}

// commitRange is good and the commits after it up to bad, oldest first;
// refs that do not resolve are refused in one line.
func commitRange(repo, good, bad string) ([]string, error) {
	var ends []string
	for _, ref := range []struct{ flag, v string }{{"--good", good}, {"--bad", bad}} {
		out, err := exec.Command("git", "-C", repo, "rev-parse", "--verify", "--quiet", ref.v+"^{commit}").Output()
		if err != nil {
			return nil, exitcode.BadInputf("%s: %q does not name a commit in %s", ref.flag, ref.v, repo)
		}
		ends = append(ends, strings.TrimSpace(string(out)))
	}
	out, err := exec.Command("git", "-C", repo, "rev-list", "--reverse", "--first-parent", ends[0]+".."+ends[1]).Output()
	if err != nil {
		return nil, exitcode.BadInputf("--good %s --bad %s: %v", good, bad, err)
	}
	commits := append([]string{ends[0]}, strings.Fields(string(out))...)
	if len(commits) < 2 {
		return nil, exitcode.BadInputf("--bad: %q is not after --good %q on its first-parent line", bad, good)
	}
	return commits, nil
}

// buildCommit builds commit's node program with cmd in a worktree of its
// own, once: builds are kept by commit in tpslab's cache.
func buildCommit(ctx context.Context, repo, commit, cmd string) (string, error) {
	dir, err := buildcache.Dir()
	if err != nil {
		return "", err
	}
	prog := filepath.Join(dir, "bisect", commit, "program")
	if st, err := os.Stat(prog); err == nil && st.Mode()&0o111 != 0 {
		return prog, nil
	}
	tree, err := os.MkdirTemp("", "tpslab-bisect-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tree)
	if out, err := exec.CommandContext(ctx, "git", "-C", repo, "worktree", "add", "--detach", tree, commit).CombinedOutput(); err != nil {
		return "", fmt.Errorf("git worktree add: %v: %s", err, strings.TrimSpace(string(out)))
	}
	defer exec.Command("git", "-C", repo, "worktree", "remove", "--force", tree).Run()
	if err := os.MkdirAll(filepath.Dir(prog), 0o755); err != nil {
		return "", err
	}
	tmp := prog + ".tmp"
	b := exec.CommandContext(ctx, "sh", "-c", cmd)
	b.Dir, b.Env = tree, append(os.Environ(), "OUT="+tmp)
	if out, err := b.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%s: %v: %s", cmd, err, strings.TrimSpace(string(out)))
	}
	if st, err := os.Stat(tmp); err != nil || st.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%s left no executable at $OUT", cmd)
	}
	return prog, os.Rename(tmp, prog)
}

package runner_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/tpslab/tpslab/internal/chain"
	"github.com/tpslab/tpslab/internal/exporter"
	"github.com/tpslab/tpslab/internal/kinds/all"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/runner"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/testbin"
	"github.com/tpslab/tpslab/internal/testnet"
)

// A run on the built-in network sees inside its nodes: CPU and memory per
// node every second, cost per payment, Go profiles that name the ledger's
// own functions; its live Prometheus endpoint parses and ends equal to
// result.json; a real Prometheus scrapes it and the nodes, and answers
// every query of the Grafana dashboard.
func TestInsideTheNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 4-validator network and Prometheus")
	}
	promBin, promErr := exec.LookPath("prometheus")
	if promErr != nil && os.Getenv("CI") == "true" {
		t.Fatal("prometheus not installed; test.sh installs Debian's prometheus package")
	}
	n := startNet(t, chain.Genesis{Seed: "inside", Accounts: 1000, Balance: 1_000_000_000})
	if _, err := os.Stat(filepath.Join(n.Home, testnet.ScrapeFile)); err != nil {
		t.Fatalf("net up wrote no scrape targets: %v", err)
	}
	ex := exporter.New("inside")
	if err := ex.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	var prom *promServer
	if promErr == nil {
		prom = startPrometheus(t, promBin, ex.Addr(), filepath.Join(n.Home, testnet.ScrapeFile))
	} else {
		t.Log("prometheus not installed here (outside CI): skipping the real scrape")
	}

	sc := scenario.Default()
	sc.Target.NetHome = n.Home
	sc.Load.Rate = 300
	sc.Load.Duration = scenario.Duration(14 * time.Second)
	sc.Load.Warmup = scenario.Duration(3 * time.Second)
	sc.Workload.Senders = 300
	sc.Profile = []string{"cpu", "allocs"}
	sc.Thresholds = []string{"node_cpu_us_per_tx<=10000000", "node0.cpu_percent>0", "wire_bytes_per_tx>0"}
	sc.Out = filepath.Join(t.TempDir(), "run")

	// Mid-run, the endpoint serves a valid exposition.
	mid := make(chan error, 1)
	atLoad(t, sc.Out, 8*time.Second, func() {
		fams, err := scrape("http://" + ex.Addr() + "/metrics")
		if err == nil && fams["tpslab_payments_committed_total"] == nil {
			err = fmt.Errorf("no tpslab_payments_committed_total among %d families", len(fams))
		}
		mid <- err
	})
	res, err := runner.Run(context.Background(), sc, runner.Options{Log: testLog{t}, Kinds: all.Registry(), Binary: testbin.Path(t), Observers: []runner.Observer{ex}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-mid:
		if err != nil {
			t.Errorf("mid-run scrape: %v", err)
		}
	default:
		t.Errorf("the run ended before its load reached 8 s: no mid-run scrape")
	}
	s := res.Summary
	for _, o := range res.Thresholds {
		if !o.OK {
			t.Errorf("threshold %s: %s", o.Expr, o.Actually())
		}
	}

	// Per second, per node: CPU and memory.
	for _, sec := range res.Series {
		if sec.Phase != "steady" {
			continue
		}
		for _, nd := range n.Nodes {
			if sec.Telemetry[nd.Name+".cpu_percent"] <= 0 || sec.Telemetry[nd.Name+".rss_bytes"] <= 0 {
				t.Fatalf("second %g: %s cpu_percent %v rss_bytes %v", sec.T, nd.Name, sec.Telemetry[nd.Name+".cpu_percent"], sec.Telemetry[nd.Name+".rss_bytes"])
			}
		}
	}
	// Cost: the nodes' CPU summed, over the committed rate.
	var cpu float64
	for _, nd := range n.Nodes {
		cpu += s.Telemetry[nd.Name+".cpu_percent"].Mean
	}
	if want := cpu * 1e4 / s.CommittedTPS; s.Cost.NodeCPUus < 0.99*want || s.Cost.NodeCPUus > 1.01*want {
		t.Errorf("node_cpu_us_per_tx %g, want %g", s.Cost.NodeCPUus, want)
	}
	if s.Cost.GeneratorCPUus <= 0 || s.Cost.WireBytes <= s.Cost.TxBytes || s.Cost.GossipOverhead <= 0 {
		t.Errorf("cost %+v", s.Cost)
	}
	t.Logf("cost per committed payment at %.0f tx/s: %+v", s.CommittedTPS, s.Cost)

	// Profiles: written, parsed, naming the ledger's own functions.
	p := s.Profiles
	if p == nil || len(p.CPUTop) == 0 || len(p.AllocTop) == 0 || len(p.Errors) > 0 {
		t.Fatalf("profiles %+v", p)
	}
	for _, nd := range n.Nodes {
		for _, kind := range []string{"cpu", "allocs"} {
			f, err := os.Open(filepath.Join(sc.Out, "profiles", nd.Name+"."+kind+".pprof"))
			if err != nil {
				t.Fatal(err)
			}
			pr, err := profile.Parse(f)
			f.Close()
			if err != nil {
				t.Fatalf("%s %s profile: %v", nd.Name, kind, err)
			}
			if !names(pr, "github.com/tpslab/tpslab/internal/chain.") {
				t.Errorf("%s %s profile names no function of the ledger application (internal/chain)", nd.Name, kind)
			}
		}
	}
	// tpslab's own, kept apart from the system's.
	f, err := os.Open(filepath.Join(sc.Out, "profiles", "tpslab.cpu.pprof"))
	if err != nil {
		t.Fatal(err)
	}
	self, err := profile.Parse(f)
	f.Close()
	if err != nil || !names(self, "github.com/tpslab/tpslab/internal/") || len(p.GeneratorCPUTop) == 0 {
		t.Errorf("tpslab's own profile: %v, top %v", err, p.GeneratorCPUTop)
	}
	t.Logf("top CPU: %v; top allocators: %v", p.CPUTop[:min(3, len(p.CPUTop))], p.AllocTop[:min(3, len(p.AllocTop))])
	t.Logf("tpslab's own top CPU: %v", p.GeneratorCPUTop[:min(5, len(p.GeneratorCPUTop))])

	// At the end, the endpoint's counters equal result.json's.
	checkExporter(t, ex, sc.Out)
	if prom != nil {
		prom.check(t, n)
	}
}

// names says whether any sample's stack holds a function with prefix.
func names(p *profile.Profile, prefix string) bool {
	for _, s := range p.Sample {
		for _, l := range s.Location {
			for _, ln := range l.Line {
				if ln.Function != nil && strings.HasPrefix(ln.Function.Name, prefix) {
					return true
				}
			}
		}
	}
	return false
}

func scrape(u string) (map[string]*dto.MetricFamily, error) {
	resp, err := http.Get(u)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.LegacyValidation)
	return p.TextToMetricFamilies(resp.Body)
}

func checkExporter(t *testing.T, ex *exporter.Exporter, dir string) {
	t.Helper()
	onDisk, err := report.ReadResult(dir)
	if err != nil {
		t.Fatal(err)
	}
	fams, err := scrape("http://" + ex.Addr() + "/metrics")
	if err != nil {
		t.Fatalf("the exposition does not parse: %v", err)
	}
	sum := func(name, reason string) float64 {
		var v float64
		if f := fams[name]; f != nil {
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					if reason == "" || l.GetName() == "reason" && l.GetValue() == reason {
						v += m.GetCounter().GetValue()
						break
					}
				}
			}
		}
		return v
	}
	s := onDisk.Summary
	for name, want := range map[string]int64{"tpslab_payments_offered_total": s.Offered, "tpslab_payments_sent_total": s.Sent,
		"tpslab_payments_accepted_total": s.Accepted, "tpslab_payments_committed_total": s.Committed, "tpslab_payments_expired_total": s.Expired,
		"tpslab_payments_rejected_total": s.RejectedTotal, "tpslab_payments_failed_total": s.FailedTotal} {
		if got := sum(name, ""); got != float64(want) {
			t.Errorf("%s %g, result.json %d", name, got, want)
		}
	}
	for reason, n := range s.Rejected {
		if got := sum("tpslab_payments_rejected_total", reason); got != float64(n) {
			t.Errorf("rejected %s: %g, result.json %d", reason, got, n)
		}
	}
	h := fams["tpslab_commit_latency_seconds"].GetMetric()[0].GetHistogram()
	// Commit latency counts every payment a block settled, failed ones too.
	if lat := onDisk.Summary.Committed + onDisk.Summary.FailedTotal; h.GetSampleCount() != uint64(lat) {
		t.Errorf("commit latency histogram holds %d, result.json %d commits (with failures)", h.GetSampleCount(), lat)
	}
	var steadyCommits int64
	for _, sec := range onDisk.Series {
		steadyCommits += sec.CommitMs.Count
	}
	if h.GetSampleCount() != uint64(steadyCommits) {
		t.Errorf("commit latency histogram %d, series %d", h.GetSampleCount(), steadyCommits)
	}
	var tps float64
	for _, m := range fams["tpslab_summary"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "metric" && l.GetValue() == "committed_tps" {
				tps = m.GetGauge().GetValue()
			}
		}
	}
	if tps != s.CommittedTPS {
		t.Errorf("tpslab_summary committed_tps %g, result.json %g", tps, s.CommittedTPS)
	}
}

type promServer struct {
	url string
	cmd *exec.Cmd
}

// startPrometheus runs Debian's prometheus on loopback with the repository's
// deploy/prometheus.yml, pointed at this run's endpoint and network.
func startPrometheus(t *testing.T, bin, tpslabAddr, targets string) *promServer {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	conf, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "deploy", "prometheus.yml"))
	if err != nil {
		t.Fatal(err)
	}
	c := strings.Replace(string(conf), "'127.0.0.1:9464'", "'"+tpslabAddr+"'", 1)
	c = strings.Replace(c, "'../net/prometheus-targets.json'", "'"+targets+"'", 1)
	if c == string(conf) {
		t.Fatal("deploy/prometheus.yml no longer holds the targets this test replaces")
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte(c), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr,
		"--enable-feature=native-histograms")
	log, _ := os.Create(filepath.Join(dir, "prometheus.log"))
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	p := &promServer{url: "http://" + addr, cmd: cmd}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if r, err := http.Get(p.url + "/-/ready"); err == nil && r.StatusCode == 200 {
			r.Body.Close()
			return p
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(dir, "prometheus.log"))
			t.Fatalf("prometheus not ready: %s", b)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (p *promServer) query(q string) (model.Vector, error) {
	resp, err := http.Get(p.url + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, err
	}
	if out.Status != "success" {
		return nil, fmt.Errorf("%s: %s", q, out.Error)
	}
	var v model.Vector
	if out.Data.ResultType == "vector" {
		if err := json.Unmarshal(out.Data.Result, &v); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// check: both jobs are up (tpslab and every node), tpslab's committed
// counter arrived, and every expression of the Grafana dashboard runs.
func (p *promServer) check(t *testing.T, n *testnet.Net) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		v, err := p.query(`up == 1`)
		jobs := map[string]int{}
		for _, s := range v {
			jobs[string(s.Metric["job"])]++
		}
		if err == nil && jobs["tpslab"] == 1 && jobs["tpslab-net"] == len(n.Nodes) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus does not see tpslab and %d nodes up: %v %v", len(n.Nodes), jobs, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	v, err := p.query(`max_over_time(tpslab_payments_committed_total[5m])`)
	if err != nil || len(v) != 1 || v[0].Value <= 0 {
		t.Errorf("prometheus holds no committed payments from tpslab: %v %v", v, err)
	}
	// As users query it (issue 35): by node without regular expressions,
	// and a rate of rejections that reads 0 when there were none.
	v, err = p.query(`sum by (node) (max_over_time(tpslab_node{metric="cpu_percent"}[5m]))`)
	nodes := map[string]bool{}
	for _, s := range v {
		nodes[string(s.Metric["node"])] = true
	}
	if err != nil || !nodes["node0"] || len(nodes) < len(n.Nodes) {
		t.Errorf("sum by (node) of tpslab_node cpu_percent: %v %v", v, err)
	}
	v, err = p.query(`sum(rate(tpslab_payments_rejected_total[1m]))`)
	if err != nil || len(v) != 1 {
		t.Errorf("rate(tpslab_payments_rejected_total[1m]) has no data: %v %v", v, err)
	}
	v, err = p.query(`sum(max_over_time(cometbft_consensus_height{job="tpslab-net"}[5m]))`)
	if err != nil || len(v) != 1 || v[0].Value <= 0 {
		t.Errorf("prometheus holds no heights from the nodes: %v %v", v, err)
	}
	_, file, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "deploy", "grafana-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("grafana-dashboard.json: %v", err)
	}
	if len(dash.Panels) < 10 {
		t.Errorf("the dashboard has %d panels", len(dash.Panels))
	}
	for _, pn := range dash.Panels {
		for _, tg := range pn.Targets {
			q := strings.ReplaceAll(tg.Expr, `run=~"$run"`, `run=~".+"`)
			if _, err := p.query(q); err != nil {
				t.Errorf("dashboard panel %q: %v", pn.Title, err)
			}
		}
	}
}

package segment

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tpslab/tpslab/internal/cluster"
	"github.com/tpslab/tpslab/internal/report"
)

// Kube runs the segments as the pods of one Indexed Job: pod i runs
// segment i (its JOB_COMPLETION_INDEX), its scenario and the network's
// description handed in as a Secret, its results streamed to the
// coordinator, which must be reachable from the pods.
type Kube struct {
	Kubeconfig, Namespace, Image string
	N                            int
	Args                         []string // each segment's run flags (the controller adds --segment, --coordinator, --out)
	Scenario                     []byte   // the scenario file, when there is one
	NetJSON                      []byte   // net.json of the network under test, when there is one
	Coordinator                  string   // its URL, as the pods reach it
	Out                          string
	Log                          io.Writer
}

// Run creates the Job, waits for its pods to end, and returns the segments'
// directories (their files streamed into Out/segments/i) and how each ended.
func (k Kube) Run(ctx context.Context) ([]string, []report.SegmentInfo, []error) {
	dirs := make([]string, k.N)
	infos := make([]report.SegmentInfo, k.N)
	errs := make([]error, k.N)
	for i := range dirs {
		dirs[i] = Dir(k.Out, i)
		os.MkdirAll(dirs[i], 0o755)
		infos[i] = report.SegmentInfo{Index: i, Count: k.N, Dir: filepath.Join("segments", strconv.Itoa(i))}
	}
	fail := func(err error) ([]string, []report.SegmentInfo, []error) {
		for i := range errs {
			errs[i] = err
		}
		return dirs, infos, errs
	}
	cs, err := cluster.Client(k.Kubeconfig)
	if err != nil {
		return fail(err)
	}
	var b [4]byte
	rand.Read(b[:])
	name := "tpslab-run-" + hex.EncodeToString(b[:])
	labels := map[string]string{"app.kubernetes.io/name": "tpslab", "tpslab/run": name}
	data := map[string][]byte{}
	args := append([]string{"run"}, k.Args...)
	if k.Scenario != nil {
		data["scenario.yaml"] = k.Scenario
		args = append(args, "/in/scenario.yaml")
	}
	if k.NetJSON != nil {
		data["net.json"] = k.NetJSON
		args = append(args, "--net-home=/in")
	}
	args = append(args, fmt.Sprintf("--segment=$(JOB_COMPLETION_INDEX)/%d", k.N), "--coordinator="+k.Coordinator,
		"--out=/out/segment", "--stream-results")
	bg := context.Background()
	secrets := cs.CoreV1().Secrets(k.Namespace)
	if _, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Data: data}, metav1.CreateOptions{}); err != nil {
		return fail(fmt.Errorf("secret %s: %v", name, err))
	}
	defer secrets.Delete(bg, name, metav1.DeleteOptions{})
	job := k.job(name, labels, args)
	jobs := cs.BatchV1().Jobs(k.Namespace)
	if _, err := jobs.Create(ctx, job, metav1.CreateOptions{}); err != nil {
		return fail(fmt.Errorf("job %s: %v", name, err))
	}
	fg := metav1.DeletePropagationForeground
	defer jobs.Delete(bg, name, metav1.DeleteOptions{PropagationPolicy: &fg})
	fmt.Fprintf(k.Log, "job %s/%s: %d segments as an Indexed Job\n", k.Namespace, name, k.N)
	sel := metav1.ListOptions{LabelSelector: "tpslab/run=" + name}
	pods := cs.CoreV1().Pods(k.Namespace)
	interrupted := false
	for {
		j, err := jobs.Get(bg, name, metav1.GetOptions{})
		if err == nil && int(j.Status.Succeeded+j.Status.Failed) >= k.N {
			break
		}
		if err == nil {
			for _, c := range j.Status.Conditions {
				if (c.Type == batchv1.JobFailed || c.Type == batchv1.JobComplete) && c.Status == corev1.ConditionTrue {
					goto done
				}
			}
		}
		if ctx.Err() != nil && !interrupted {
			// Ctrl-C: each segment is told (SIGTERM), ends its load and
			// streams its partial result.
			interrupted = true
			grace := int64(60)
			pods.DeleteCollection(bg, metav1.DeleteOptions{GracePeriodSeconds: &grace}, sel)
		}
		if interrupted {
			if l, err := pods.List(bg, sel); err == nil && len(l.Items) == 0 {
				break
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
done:
	l, err := pods.List(bg, sel)
	if err != nil {
		return fail(err)
	}
	for _, p := range l.Items {
		i, err := strconv.Atoi(p.Annotations[batchv1.JobCompletionIndexAnnotation])
		if err != nil || i < 0 || i >= k.N {
			continue
		}
		infos[i].Where = fmt.Sprintf("pod %s on %s", p.Name, p.Spec.NodeName)
		if logs, err := pods.GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(bg); err == nil {
			os.WriteFile(filepath.Join(dirs[i], "pod.log"), logs, 0o644)
		}
		for _, c := range p.Status.ContainerStatuses {
			if t := c.State.Terminated; t != nil && t.ExitCode != 0 && t.ExitCode != 1 {
				errs[i] = fmt.Errorf("pod %s exited %d (%s); its log is %s", p.Name, t.ExitCode, t.Reason, filepath.Join(dirs[i], "pod.log"))
			}
		}
	}
	for i := range errs {
		if infos[i].Where == "" && errs[i] == nil {
			errs[i] = fmt.Errorf("segment %d: its pod is gone", i)
		}
	}
	return dirs, infos, errs
}

// job is the Indexed Job of the segments: one pod each, its scenario and
// net.json from the secret name, spread over the cluster's machines.
func (k Kube) job(name string, labels map[string]string, args []string) *batchv1.Job {
	n32 := int32(k.N)
	zero := int32(0)
	no := false
	indexed := batchv1.IndexedCompletion
	pull := corev1.PullIfNotPresent
	if strings.HasPrefix(k.Image, "tpslab.local/") {
		pull = corev1.PullNever
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: batchv1.JobSpec{Completions: &n32, Parallelism: &n32, CompletionMode: &indexed, BackoffLimit: &zero,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever, AutomountServiceAccountToken: &no, EnableServiceLinks: &no,
					Containers: []corev1.Container{{Name: "segment", Image: k.Image, ImagePullPolicy: pull, Args: args,
						VolumeMounts: []corev1.VolumeMount{{Name: "in", MountPath: "/in", ReadOnly: true}, {Name: "out", MountPath: "/out"}}}},
					Volumes: []corev1.Volume{
						{Name: "in", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: name}}},
						{Name: "out", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
					},
					// Segments on different machines where the cluster has them.
					TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "kubernetes.io/hostname",
						WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tpslab/run": name}}}},
				},
			}},
	}
}

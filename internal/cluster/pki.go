package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// ca signs the cluster's certificates: one self-signed authority for the
// API server, its clients and the kubelets, made at `cluster up` and kept
// in HOME/pki (a test cluster's, never a real one's).
type ca struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	dir  string
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}

func writeKey(path string, k *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return err
	}
	return writePEM(path, "EC PRIVATE KEY", der)
}

func newCA(dir string) (*ca, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "tpslab-cluster-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().AddDate(1, 0, 0), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, _ := x509.ParseCertificate(der)
	if err := writePEM(filepath.Join(dir, "ca.pem"), "CERTIFICATE", der); err != nil {
		return nil, err
	}
	if err := writeKey(filepath.Join(dir, "ca-key.pem"), key); err != nil {
		return nil, err
	}
	return &ca{cert: cert, key: key, dir: dir}, nil
}

var serial int64 = 1

// issue writes NAME.pem and NAME-key.pem: a certificate for cn in orgs,
// for a server at ips and dns names when any are given, else a client.
func (c *ca) issue(name, cn string, orgs []string, ips []net.IP, dns []string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	serial++
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().AddDate(1, 0, 0),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment, BasicConstraintsValid: true,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, IPAddresses: ips, DNSNames: dns}
	if len(ips) > 0 || len(dns) > 0 {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.key)
	if err != nil {
		return fmt.Errorf("certificate %s: %v", name, err)
	}
	if err := writePEM(filepath.Join(c.dir, name+".pem"), "CERTIFICATE", der); err != nil {
		return err
	}
	return writeKey(filepath.Join(c.dir, name+"-key.pem"), key)
}

// kubeconfig writes a kubeconfig for the client certificate NAME.
func (c *ca) kubeconfig(path, server, name string) error {
	p := func(f string) string { return filepath.Join(c.dir, f) }
	body := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: tpslab
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: %s
  user:
    client-certificate: %s
    client-key: %s
contexts:
- name: tpslab
  context:
    cluster: tpslab
    user: %s
current-context: tpslab
`, server, p("ca.pem"), name, p(name+".pem"), p(name+"-key.pem"), name)
	return os.WriteFile(path, []byte(body), 0o600)
}

package netem

import (
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"sort"
	"time"
)

// ProbeRTT measures the round trip through a link to a CometBFT node's P2P
// port, samples times, and returns the median. It uses the first step of
// the node's own handshake (SecretConnection): the node sends its ephemeral
// key on accept and answers ours at once with its signed challenge, so the
// time from our key to the first byte of that answer is one round trip
// through the link's toxics plus the node's key agreement (tens of µs).
// No library offers this: a TCP connect to a proxy returns before any
// delayed byte crosses it.
func ProbeRTT(addr string, samples int) (time.Duration, error) {
	return probe(addr, samples, probeOnce)
}

// ProbeHTTP measures the round trip through a link to an HTTP server: from
// writing a small request on a fresh connection to the first byte of the
// answer (CometBFT's /health answers at once).
func ProbeHTTP(addr string, samples int) (time.Duration, error) {
	return probe(addr, samples, httpOnce)
}

// ProbePostgres measures the round trip through a link to PostgreSQL: from
// an SSLRequest (the 8 bytes a client may send first) to the one byte the
// server answers at once ('S' or 'N'), before any authentication.
func ProbePostgres(addr string, samples int) (time.Duration, error) {
	return probe(addr, samples, postgresOnce)
}

func postgresOnce(addr string) (time.Duration, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	req := []byte{0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f} // length 8, code 80877103
	start := time.Now()
	if _, err := c.Write(req); err != nil {
		return 0, err
	}
	one := make([]byte, 1)
	if _, err := io.ReadFull(c, one); err != nil {
		return 0, fmt.Errorf("read PostgreSQL's answer: %w", err)
	}
	if one[0] != 'S' && one[0] != 'N' {
		return 0, fmt.Errorf("PostgreSQL answered %q to an SSLRequest, expected S or N", one[0])
	}
	return time.Since(start), nil
}

func probe(addr string, samples int, once func(string) (time.Duration, error)) (time.Duration, error) {
	var rtts []time.Duration
	var last error
	for i := 0; i < samples; i++ {
		d, err := once(addr)
		if err != nil {
			last = err
			continue
		}
		rtts = append(rtts, d)
	}
	if len(rtts) == 0 {
		return 0, fmt.Errorf("probe %s: %w", addr, last)
	}
	sort.Slice(rtts, func(i, j int) bool { return rtts[i] < rtts[j] })
	return rtts[len(rtts)/2], nil
}

func probeOnce(addr string) (time.Duration, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	// The node's ephemeral key: a length-prefixed BytesValue, 35 bytes.
	theirs := make([]byte, 35)
	if _, err := io.ReadFull(c, theirs); err != nil {
		return 0, fmt.Errorf("read the node's handshake: %w", err)
	}
	ours := make([]byte, 35)
	ours[0], ours[1], ours[2] = 34, 0x0a, 32
	if _, err := rand.Read(ours[3:]); err != nil {
		return 0, err
	}
	start := time.Now()
	if _, err := c.Write(ours); err != nil {
		return 0, err
	}
	one := make([]byte, 1)
	if _, err := io.ReadFull(c, one); err != nil {
		return 0, fmt.Errorf("read the node's answer: %w", err)
	}
	return time.Since(start), nil
}

func httpOnce(addr string) (time.Duration, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	start := time.Now()
	if _, err := io.WriteString(c, "GET /health HTTP/1.1\r\nHost: "+addr+"\r\nConnection: close\r\n\r\n"); err != nil {
		return 0, err
	}
	one := make([]byte, 1)
	if _, err := io.ReadFull(c, one); err != nil {
		return 0, fmt.Errorf("read the answer: %w", err)
	}
	return time.Since(start), nil
}

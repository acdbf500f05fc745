package netem

import (
	"fmt"
	"net/http"
	"time"

	toxiclient "github.com/Shopify/toxiproxy/v2/client"
)

// Control changes a running network's links through Toxiproxy's API.
type Control struct {
	links  *Emulation
	client *toxiclient.Client
}

// NewControl talks to the links process of links.
func NewControl(links *Emulation) *Control {
	return &Control{links: links, client: toxiclient.NewClient(links.API)}
}

// Ready waits until the API answers.
func (c *Control) Ready(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		res, err := http.Get("http://" + c.links.API + "/version")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the links' API on %s did not answer within %s: %v", c.links.API, timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Set replaces a link's toxics with those of cond.
func (c *Control) Set(link string, cond Conditions) error {
	p, err := c.client.Proxy(link)
	if err != nil {
		return fmt.Errorf("link %s: %w", link, err)
	}
	have, err := p.Toxics()
	if err != nil {
		return fmt.Errorf("link %s: %w", link, err)
	}
	for _, t := range have {
		if err := p.RemoveToxic(t.Name); err != nil {
			return fmt.Errorf("link %s: remove %s: %w", link, t.Name, err)
		}
	}
	for _, t := range toxics(link, cond) {
		if _, err := p.AddToxic(t.Name, t.Type, t.Stream, t.Toxicity, t.Attributes); err != nil {
			return fmt.Errorf("link %s: add %s: %w", link, t.Name, err)
		}
	}
	return nil
}

// Cut closes a link's connections and refuses new ones (a partition);
// Heal opens it again.
func (c *Control) Cut(link string) error { return c.enable(link, false) }

// Heal opens a link Cut closed.
func (c *Control) Heal(link string) error { return c.enable(link, true) }

func (c *Control) enable(link string, on bool) error {
	p, err := c.client.Proxy(link)
	if err != nil {
		return fmt.Errorf("link %s: %w", link, err)
	}
	if on {
		err = p.Enable()
	} else {
		err = p.Disable()
	}
	if err != nil {
		return fmt.Errorf("link %s: %w", link, err)
	}
	return nil
}

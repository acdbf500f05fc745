package cosmos

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tpslab/tpslab/internal/sut"
)

// Fees from the chain (cosmos.fee auto): each payment pays its gas limit
// times the chain's current gas price times a margin. The price is the fee
// market's (github.com/skip-mev/feemarket, as on the Cosmos Hub) where the
// chain has one; elsewhere it is learnt from the node's own refusal
// ("insufficient fees; got: 0stake required: 200stake"), since a node's
// minimum gas prices are in its app.toml, not in any ABCI query.

// gasPricePath is the fee market's gas price query.
const gasPricePath = "/feemarket.feemarket.v1.Query/GasPrice"

// refreshEvery is how often live signing re-reads the price: about a
// block, the fastest the fee market moves it.
const refreshEvery = time.Second

// FeeMarketParams are the fee market's parameters tpslab reads.
type FeeMarketParams struct {
	Enabled             bool   // field 11; a disabled one falls back to the SDK's fees
	MaxBlockUtilization uint64 // field 8: gas a block may use; the target is half
}

// ReadFeeMarket reads the fee market's parameters; found is false when the
// chain has none.
func ReadFeeMarket(ctx context.Context, query QueryFunc) (p FeeMarketParams, found bool, err error) {
	v, err := query(ctx, "/feemarket.feemarket.v1.Query/Params", nil)
	if err != nil {
		if strings.Contains(err.Error(), "unknown query path") {
			return p, false, nil
		}
		return p, false, err
	}
	fs, err := fields(v)
	if err != nil {
		return p, false, err
	}
	params, ok := first(fs, 1)
	if !ok {
		return p, false, nil
	}
	ps, err := fields(params.bytes)
	if err != nil {
		return p, false, err
	}
	if f, ok := first(ps, 11); ok {
		p.Enabled = f.u == 1
	}
	if f, ok := first(ps, 8); ok {
		p.MaxBlockUtilization = f.u
	}
	return p, true, nil
}

// feeMarketOn says whether the chain runs the fee market, enabled.
func feeMarketOn(ctx context.Context, query QueryFunc) (bool, error) {
	p, _, err := ReadFeeMarket(ctx, query)
	return p.Enabled, err
}

// GasPrice reads the fee market's current price of one gas unit in denom;
// ok is false when the chain has no fee market, or has it disabled.
func GasPrice(ctx context.Context, query QueryFunc, denom string) (price float64, ok bool, err error) {
	if on, err := feeMarketOn(ctx, query); err != nil || !on {
		return 0, false, err
	}
	price, err = currentPrice(ctx, query, denom)
	return price, err == nil, err
}

// currentPrice reads the price of a fee market known to be on: the watch
// and the re-pricing ask it every second, and its params once.
func currentPrice(ctx context.Context, query QueryFunc, denom string) (float64, error) {
	v, err := query(ctx, gasPricePath, appendString(nil, 1, denom))
	if err != nil {
		return 0, err
	}
	c, err := decodeCoinResponse(v)
	if err != nil || c.Amount == "" {
		return 0, err
	}
	return parseDec(c.Amount)
}

// parseDec reads an SDK decimal: "1.5" as JSON writes it, or the protobuf
// form, the integer of the value times 10^18.
func parseDec(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("gas price %q: expected a decimal", s)
	}
	if !strings.Contains(s, ".") {
		v /= 1e18
	}
	return v, nil
}

// pricing is the codec's automatic fee: what it pays, from what price.
type pricing struct {
	margin    float64
	price     atomic.Uint64 // math.Float64bits of the gas price in use
	first     float64       // the price read before the load
	peak      atomic.Uint64 // the highest price seen, as bits
	feeMarket bool          // the price comes from a fee market
	last      atomic.Int64  // unix nanoseconds of the last read
	mu        sync.Mutex    // one re-read at a time
}

// FeeMarket says whether the chain runs a fee market.
func (c *Codec) FeeMarket(ctx context.Context) bool {
	if c.pricing != nil {
		return c.pricing.feeMarket
	}
	on, err := feeMarketOn(ctx, c.query)
	return on && err == nil
}

// raisePeak keeps the highest price seen.
func (p *pricing) raisePeak(price float64) {
	if price > math.Float64frombits(p.peak.Load()) {
		p.peak.Store(math.Float64bits(price))
	}
}

// UseChainFee makes every payment pay gas × the chain's gas price × margin,
// reading the price now. It says where the price came from.
func (c *Codec) UseChainFee(ctx context.Context, margin float64) (string, error) {
	p := &pricing{margin: margin}
	price, ok, err := GasPrice(ctx, c.query, c.Denom)
	if err != nil {
		return "", fmt.Errorf("read the fee market's gas price of %s: %w", c.Denom, err)
	}
	p.feeMarket, p.first = ok, price
	c.pricing = p
	c.setPrice(price)
	if !ok {
		return "the chain has no fee market: no fee until a node asks for one (its minimum gas prices)", nil
	}
	return fmt.Sprintf("the fee market's gas price is %s%s per gas", fmtPrice(price), c.Denom), nil
}

// setPrice sets the gas price in use and the fee it makes.
func (c *Codec) setPrice(price float64) {
	p := c.pricing
	p.price.Store(math.Float64bits(price))
	p.raisePeak(price)
	p.last.Store(time.Now().UnixNano())
	c.fees.Store(c.feeFor(c.Gas, price))
}

// feeFor is the fee of a payment reserving gas at price, with the margin.
func (c *Codec) feeFor(gas uint64, price float64) *[]Coin {
	amount := uint64(math.Ceil(float64(gas) * price * c.pricing.margin))
	var fee []Coin
	if amount > 0 {
		fee = []Coin{{Denom: c.Denom, Amount: strconv.FormatUint(amount, 10)}}
	}
	return &fee
}

// fee is what a payment signed now pays.
func (c *Codec) fee() []Coin { return *c.fees.Load() }

// WatchPrice re-reads the fee market's price every refreshEvery until stop
// or ctx ends, keeping the highest seen; with follow, payments signed from
// then on pay the new price (live signing). Presigned bytes cannot follow,
// so without it the fee stays until a refusal re-prices it.
func (c *Codec) WatchPrice(ctx context.Context, follow bool) (stop func()) {
	p := c.pricing
	ctx, cancel := context.WithCancel(ctx)
	if p == nil || !p.feeMarket {
		return cancel
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(refreshEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
			price, err := currentPrice(rctx, c.query, c.Denom)
			rcancel()
			if err != nil {
				continue
			}
			p.mu.Lock()
			if follow {
				c.setPrice(price)
			} else {
				p.raisePeak(price)
			}
			p.mu.Unlock()
		}
	}()
	return func() { cancel(); <-done }
}

var required = regexp.MustCompile(`required: ?([0-9]+(?:\.[0-9]+)?)([a-zA-Z][a-zA-Z0-9/:._-]*)`)

// Reprice takes a refusal for an insufficient fee: it reads the price the
// chain asks now (the fee market's, or the one in the refusal) and says
// whether the payment should be signed again at it. A price only rises
// here; the live re-read lets it fall.
func (c *Codec) Reprice(ctx context.Context, r sut.Receipt) bool {
	p := c.pricing
	if p == nil || r.Status != sut.Rejected || r.Reason != "insufficient_fee" {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	cur := math.Float64frombits(p.price.Load())
	price := cur
	if p.feeMarket {
		// Many lanes are refused at once: one read serves them all.
		if time.Now().UnixNano()-p.last.Load() > int64(100*time.Millisecond) {
			if v, err := currentPrice(ctx, c.query, c.Denom); err == nil {
				price = v
			}
		}
	} else if m := required.FindStringSubmatch(r.Detail); m != nil && m[2] == c.Denom {
		if need, err := strconv.ParseFloat(m[1], 64); err == nil && c.Gas > 0 {
			price = need / float64(c.Gas)
		}
	}
	if price > cur {
		c.setPrice(price)
	}
	return *c.fees.Load() != nil
}

// FeeFacts says, for the summary's notes, what fees were paid: the price
// before the load and the highest seen, and what a payment paid at the end.
func (c *Codec) FeeFacts() (first, peak float64, fee string, ok bool) {
	p := c.pricing
	if p == nil {
		return 0, 0, "", false
	}
	f := *c.fees.Load()
	fee = "0" + c.Denom
	if len(f) > 0 {
		fee = f[0].Amount + f[0].Denom
	}
	return p.first, math.Float64frombits(p.peak.Load()), fee, true
}

func fmtPrice(p float64) string { return strconv.FormatFloat(p, 'f', -1, 64) }

package taler

import (
	"testing"
)

// The parsers of the exchange's answers never panic, and what they accept
// is well-formed: fuzzed from answers the real exchange gave.

func FuzzParseKeys(f *testing.F) {
	f.Add([]byte(`{"version":"14:0:2","currency":"KUDOS","master_public_key":"HTAGVB178ZHV1JZH7W2891TYBPYWNY4SG3ZQPMZ3WD96YMFP3DWG","signkeys":[{"key":"X4R7AG4FNKSJ3T70ZC6B04M32TGF34EEQ5W9RMNFQJ2G3JM89GMG"}],"denoms":[{"denom_pub":{"cipher":"RSA","age_mask":0,"rsa_public_key":"040000XKDJCF5MP12A168TBE0F61YXDCJ41423WN"},"value":"KUDOS:1","fee_withdraw":"KUDOS:0","fee_deposit":"KUDOS:0","stamp_start":{"t_s":1},"stamp_expire_withdraw":{"t_s":2},"stamp_expire_deposit":{"t_s":3}}]}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		k, err := ParseKeys(b)
		if err != nil {
			return
		}
		if len(k.MasterPub) != 32 {
			t.Fatalf("accepted a master key of %d bytes", len(k.MasterPub))
		}
		for _, d := range k.Denoms {
			if d.Key == nil || d.Value.Currency != k.Currency {
				t.Fatalf("accepted a denomination without a key or in another currency: %+v", d)
			}
		}
	})
}

func FuzzParseWithdrawAnswer(f *testing.F) {
	f.Add([]byte(`{"ev_sig":{"cipher":"RSA","blinded_rsa_signature":"ZNNJEEAQR9VV77JXD4ZJMF6VTW2AN6KB8H2S4N59FJ0PJGV57PRG"}}`))
	f.Add([]byte(`{"ev_sig":{"cipher":"CS"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if sig, err := ParseWithdrawAnswer(b); err == nil && sig == nil {
			t.Fatal("accepted an answer without a signature")
		}
	})
}

func FuzzParseDepositAnswer(f *testing.F) {
	f.Add([]byte(`{"exchange_timestamp":{"t_s":1795679311},"exchange_sig":"JCDAYY27QJZA8AF2MD2MBJGJ957YYCKRBXWDK3MRXK9NKYNCXJ0NN5SRDWQ8YH11Z7ACB9K23DJFDA0MXXE38K8QMT96D013CVAY800","exchange_pub":"X4R7AG4FNKSJ3T70ZC6B04M32TGF34EEQ5W9RMNFQJ2G3JM89GMG"}`))
	f.Add([]byte(`{"code":1012,"hint":"insufficient funds"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := ParseDepositAnswer(b)
		if err == nil && (len(a.ExchangeSig) != 64 || len(a.ExchangePub) != 32) {
			t.Fatalf("accepted a signature of %d bytes and a key of %d", len(a.ExchangeSig), len(a.ExchangePub))
		}
	})
}

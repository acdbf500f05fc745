/* Prints test vectors for tpslab's Go implementation of the Taler
 * exchange's wire formats, computed by the exchange's own libtalerutil
 * and GNUnet's libgnunetutil (see crypto_test.go for how it is built). */
#include <stdio.h>
#include <string.h>
#include <gnunet/gnunet_util_lib.h>
#include <taler/taler_util.h>

static void hex (const char *name, const void *p, size_t n, int last)
{
  const unsigned char *b = p;
  printf ("  \"%s\": \"", name);
  for (size_t i = 0; i < n; i++)
    printf ("%02x", b[i]);
  printf ("\"%s\n", last ? "" : ",");
}

static void fill (void *p, size_t n, unsigned char seed)
{
  unsigned char *b = p;
  for (size_t i = 0; i < n; i++)
    b[i] = (unsigned char) (seed + 7 * i);
}

int main (void)
{
  char kdf[100];
  GNUNET_assert (GNUNET_YES == GNUNET_CRYPTO_kdf (kdf, sizeof kdf, "salt", 4, "ikm", 3, "info", (size_t) 4, "more", (size_t) 4, NULL, 0));
  printf ("{\n");
  hex ("kdf_salt_ikm_info_more_100", kdf, sizeof kdf, 0);

  struct GNUNET_CRYPTO_RsaPrivateKey *rpriv = GNUNET_CRYPTO_rsa_private_key_create (1024);
  struct TALER_DenominationPublicKey dpub = { .cipher = TALER_DENOMINATION_RSA };
  dpub.details.rsa_public_key = GNUNET_CRYPTO_rsa_private_key_get_public (rpriv);
  void *enc; size_t elen = GNUNET_CRYPTO_rsa_public_key_encode (dpub.details.rsa_public_key, &enc);
  hex ("rsa_public_key", enc, elen, 0);
  struct TALER_DenominationHashP dh;
  TALER_denom_pub_hash (&dpub, &dh);
  hex ("denom_pub_hash", &dh, sizeof dh, 0);

  struct GNUNET_HashCode msg; fill (&msg, sizeof msg, 3);
  hex ("fdh_message", &msg, sizeof msg, 0);
  struct GNUNET_CRYPTO_RsaSignature *sig = GNUNET_CRYPTO_rsa_sign_fdh (rpriv, &msg);
  void *senc; size_t slen = GNUNET_CRYPTO_rsa_signature_encode (sig, &senc);
  hex ("fdh_signature", senc, slen, 0);

  struct GNUNET_CRYPTO_RsaBlindingKeySecret bks; fill (&bks, sizeof bks, 11);
  hex ("bks", &bks, sizeof bks, 0);
  void *bl; size_t bllen;
  GNUNET_assert (GNUNET_YES == GNUNET_CRYPTO_rsa_blind (&msg, &bks, dpub.details.rsa_public_key, &bl, &bllen));
  hex ("blinded", bl, bllen, 0);

  struct TALER_BlindedPlanchet bp = { .cipher = TALER_DENOMINATION_RSA };
  bp.details.rsa_blinded_planchet.blinded_msg = bl;
  bp.details.rsa_blinded_planchet.blinded_msg_size = bllen;
  struct TALER_BlindedCoinHashP bch;
  TALER_coin_ev_hash (&bp, &dh, &bch);
  hex ("coin_ev_hash", &bch, sizeof bch, 0);

  struct TALER_CoinSpendPrivateKeyP coin_priv; fill (&coin_priv, sizeof coin_priv, 21);
  struct TALER_CoinSpendPublicKeyP coin_pub;
  GNUNET_CRYPTO_eddsa_key_get_public (&coin_priv.eddsa_priv, &coin_pub.eddsa_pub);
  hex ("coin_priv", &coin_priv, sizeof coin_priv, 0);
  hex ("coin_pub", &coin_pub, sizeof coin_pub, 0);
  struct TALER_CoinPubHashP ch;
  TALER_coin_pub_hash (&coin_pub, NULL, &ch);
  hex ("coin_pub_hash", &ch, sizeof ch, 0);

  struct TALER_Amount amount, fee;
  GNUNET_assert (GNUNET_OK == TALER_string_to_amount ("KUDOS:3.25", &amount));
  GNUNET_assert (GNUNET_OK == TALER_string_to_amount ("KUDOS:0.01", &fee));
  struct TALER_AmountNBO an; TALER_amount_hton (&an, &amount);
  hex ("amount_nbo_KUDOS_3.25", &an, sizeof an, 0);

  struct TALER_ReservePrivateKeyP rpk; fill (&rpk, sizeof rpk, 31);
  struct TALER_ReserveSignatureP rsig;
  TALER_wallet_withdraw_sign (&dh, &amount, &bch, &rpk, &rsig);
  hex ("reserve_priv", &rpk, sizeof rpk, 0);
  hex ("withdraw_sig", &rsig, sizeof rsig, 0);

  struct TALER_WireSaltP salt; fill (&salt, sizeof salt, 41);
  struct TALER_MerchantWireHashP hw;
  const char *payto = "payto://x-taler-bank/127.0.0.1:1/merchant7?receiver-name=M";
  TALER_merchant_wire_signature_hash (payto, &salt, &hw);
  hex ("wire_salt", &salt, sizeof salt, 0);
  hex ("wire_hash", &hw, sizeof hw, 0);

  struct TALER_PrivateContractHashP hc; fill (&hc, sizeof hc, 51);
  struct TALER_MerchantPublicKeyP mpub; fill (&mpub, sizeof mpub, 61);
  struct GNUNET_TIME_Timestamp ts = { .abs_time.abs_value_us = 1700000000ULL * 1000000ULL };
  struct GNUNET_TIME_Timestamp rd = { .abs_time.abs_value_us = 1700000100ULL * 1000000ULL };
  struct TALER_CoinSpendSignatureP csig;
  TALER_wallet_deposit_sign (&amount, &fee, &hw, &hc, NULL, NULL, &dh, ts, &mpub, rd, &coin_priv, &csig);
  hex ("contract_hash", &hc, sizeof hc, 0);
  hex ("merchant_pub", &mpub, sizeof mpub, 0);
  hex ("deposit_sig", &csig, sizeof csig, 0);
  char *crock = GNUNET_STRINGS_data_to_string_alloc (&coin_pub, sizeof coin_pub);
  printf ("  \"coin_pub_crockford\": \"%s\"\n}\n", crock);
  return 0;
}

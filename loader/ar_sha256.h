/* ar_sha256.h - SHA-256 (FIPS 180-4), used to fingerprint model files (ar_model.sha256).
 * No Debian crypto library is a dependency of arenad, so the loader carries this small one. */
#ifndef AR_SHA256_H
#define AR_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct ar_sha256 {
  uint32_t state[8];
  uint64_t total_bytes;
  uint8_t block[64];
  uint32_t block_used;
} ar_sha256_t;

void ar_sha256_init(ar_sha256_t *s);
void ar_sha256_update(ar_sha256_t *s, const void *data, size_t bytes);
void ar_sha256_final(ar_sha256_t *s, uint8_t digest[32]);
/* One-shot digest of `bytes` bytes at `data`. */
void ar_sha256(const void *data, size_t bytes, uint8_t digest[32]);
/* Lower-case hex of a digest into out[65] (NUL-terminated). */
void ar_sha256_hex(const uint8_t digest[32], char out[65]);

#endif

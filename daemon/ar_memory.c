/* ar_memory.c - the daemon's resident memory, accounted part by part (the stats "memory" object)
 * and held against memory_limit at each load.
 *
 * ar_rss.c measures; this file knows what to measure: the pool mapping, the model file copies of
 * the cache (each copy once, however many models share it), OpenBLAS's mappings, the heap, and
 * the rest from smaps with all of those ranges left out. Runs on the stats thread for GetStats
 * (ar_stats.c) and on the loop thread for memory_limit at a load.
 */
#include "config.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/ar_error.h"
#include "daemon/ar_daemon.h"
#include "daemon/ar_rss.h"

#define AR_MEMORY_MAX_RANGES (AR_CONFIG_MAX_MODELS * 4 + 64)

static uint64_t page_round(uint64_t bytes) {
  long v = sysconf(_SC_PAGESIZE);
  uint64_t pg = v > 0 ? (uint64_t)v : 4096;
  return (bytes + pg - 1) / pg * pg;
}

uint64_t ar_memory_mapping_resident(const ar_cached_model_t *cm) {
  if (cm == NULL || cm->model == NULL) return 0;
  return ar_rss_resident_bytes(cm->model->file, cm->model->file_bytes);
}

int ar_memory_shm_list(const ar_server_t *srv, ar_memory_shm_t *shm) {
  memset(shm, 0, sizeof(*shm));
  shm->ranges = calloc(AR_MEMORY_MAX_SHM, sizeof(*shm->ranges));
  if (shm->ranges == NULL) return AR_ENOMEM;
  shm->n = ar_conn_shm_mappings(srv, shm->ranges, AR_MEMORY_MAX_SHM, &shm->bytes);
  if (shm->n > AR_MEMORY_MAX_SHM) shm->n = AR_MEMORY_MAX_SHM;
  return 0;
}

void ar_memory_shm_free(ar_memory_shm_t *shm) {
  free(shm->ranges);
  memset(shm, 0, sizeof(*shm));
}

int ar_memory_measure(ar_server_t *srv, const ar_memory_shm_t *shm, ar_memory_t *mem, ar_snap_copy_t *copies,
                      size_t cap, size_t *n_copies, char *msg, size_t msg_bytes) {
  memset(mem, 0, sizeof(*mem));
  if (n_copies) *n_copies = 0;
  int rc = ar_rss_read_status(&mem->status, msg, msg_bytes);
  if (rc != 0) return rc;
  ar_rss_range_t skip[AR_MEMORY_MAX_RANGES];
  size_t n_skip = 0;
  if (srv->pool.base) {
    mem->pool_resident_bytes = ar_rss_resident_bytes(srv->pool.base, srv->pool.bytes);
    skip[n_skip++] = (ar_rss_range_t){(uintptr_t)srv->pool.base, (uintptr_t)srv->pool.base + srv->pool.bytes};
  }
  /* The cache list: the load thread inserts under the lock while we read. */
  pthread_mutex_lock(&srv->cache_lock);
  for (ar_cached_model_t *cm = srv->cache; cm; cm = cm->next) {
    if (cm->model == NULL) continue;
    mem->model_mappings++;
    uint64_t res = ar_memory_mapping_resident(cm);
    mem->models_resident_bytes += res;
    if (copies && *n_copies < cap) copies[(*n_copies)++] = (ar_snap_copy_t){cm, res};
    if (n_skip < AR_MEMORY_MAX_RANGES)
      skip[n_skip++] = (ar_rss_range_t){(uintptr_t)cm->model->file,
                                        (uintptr_t)cm->model->file + page_round(cm->model->file_bytes)};
  }
  pthread_mutex_unlock(&srv->cache_lock);
  /* Clients' shared-memory buffers: a part of their own (smaps shows them as file mappings, which
   * the rest would count as code), held against memory_limit with the rest. */
  for (size_t i = 0; shm && i < shm->n; i++) {
    const uintptr_t a = shm->ranges[i][0], b = shm->ranges[i][1];
    mem->shm_resident_bytes += ar_rss_resident_bytes((const void *)a, b - a);
    if (n_skip < AR_MEMORY_MAX_RANGES) skip[n_skip++] = (ar_rss_range_t){a, b};
  }
  mem->shm_bytes = shm ? shm->bytes : 0;
  ar_rss_blas(&mem->blas);
  n_skip += ar_rss_blas_ranges(skip + n_skip, AR_MEMORY_MAX_RANGES - n_skip);
  if (n_skip > AR_MEMORY_MAX_RANGES) n_skip = AR_MEMORY_MAX_RANGES;
  ar_rss_heap(&mem->heap);
  rc = ar_rss_rest(skip, n_skip, &mem->rest, msg, msg_bytes);
  if (rc != 0) return rc;
  mem->accounted_bytes = mem->pool_resident_bytes + mem->models_resident_bytes + mem->blas.resident_bytes +
                         mem->heap.in_use_bytes + mem->rest.code_bytes + mem->rest.stack_bytes +
                         mem->shm_resident_bytes;
  mem->unaccounted_bytes = (int64_t)mem->status.rss_bytes - (int64_t)mem->accounted_bytes;
  return 0;
}

struct json_t *ar_memory_json(ar_server_t *srv, const ar_snapshot_t *snap, uint64_t now_us) {
  json_int_t age_ms = (json_int_t)((now_us - snap->taken_us) / 1000);
  if (snap->rc != 0) return json_pack("{s:s,s:I}", "error", snap->msg, "snapshot_age_ms", age_ms);
  const ar_memory_t mem = snap->mem;
  json_t *o = json_object();
#define SET(k, v) json_object_set_new(o, k, json_integer((json_int_t)(v)))
  SET("rss_bytes", mem.status.rss_bytes);
  SET("peak_rss_bytes", mem.status.peak_rss_bytes);
  SET("pool_resident_bytes", mem.pool_resident_bytes);
  SET("models_resident_bytes", mem.models_resident_bytes);
  SET("blas_resident_bytes", mem.blas.resident_bytes);
  SET("heap_bytes", mem.heap.in_use_bytes);
  SET("rest_bytes", mem.rest.code_bytes + mem.rest.stack_bytes);
  SET("shm_bytes", mem.shm_bytes);
  SET("shm_resident_bytes", mem.shm_resident_bytes);
  SET("accounted_bytes", mem.accounted_bytes);
  SET("unaccounted_bytes", mem.unaccounted_bytes);
  SET("memory_limit_bytes", srv->cfg.memory_limit_bytes);
  /* How each part was found (ar_rss.h). */
  SET("model_mappings", mem.model_mappings);
  json_object_set_new(o, "blas_measured", json_boolean(mem.blas.measured));
  SET("blas_mappings", mem.blas.mappings);
  SET("blas_mapped_bytes", mem.blas.mapped_bytes);
  json_object_set_new(o, "heap_measured", json_boolean(mem.heap.measured));
  SET("heap_system_bytes", mem.heap.system_bytes);
  SET("heap_mmapped_bytes", mem.heap.mmapped_bytes);
  SET("code_bytes", mem.rest.code_bytes);
  SET("stack_bytes", mem.rest.stack_bytes);
  SET("anon_other_bytes", mem.rest.anon_other_bytes);
  SET("rss_anon_bytes", mem.status.anon_bytes);
  SET("rss_file_bytes", mem.status.file_bytes + mem.status.shmem_bytes);
  /* The figures above are the stats thread's last walk (ar_stats.c): how old it is, and what it took. */
  SET("snapshot_age_ms", age_ms);
  SET("snapshot_walk_us", snap->walk_us);
#undef SET
  return o;
}

int ar_memory_admit_load(ar_server_t *srv, const char *name, const ar_memory_region_t *regions, int n_regions,
                         char *msg, size_t msg_bytes) {
  uint64_t limit = srv->cfg.memory_limit_bytes;
  if (limit == 0) return 0;
  ar_memory_t mem;
  ar_memory_shm_t shm;
  int rc = ar_memory_shm_list(srv, &shm);
  if (rc != 0) return ar_errf(msg, msg_bytes, rc, "no memory to list the shared-memory buffers");
  rc = ar_memory_measure(srv, &shm, &mem, NULL, 0, NULL, msg, msg_bytes);
  ar_memory_shm_free(&shm);
  if (rc != 0) return rc;
  /* The model's file copy is already read (and counted); its regions are allocated but not yet
   * touched: count every byte of them that is not resident yet (placement and invokes fill them). */
  uint64_t add = 0, pers = 0, act = 0;
  for (int i = 0; i < n_regions; i++) {
    const ar_memory_region_t *r = &regions[i];
    uint64_t res = ar_rss_resident_bytes(ar_pool_ptr(&srv->pool, r->offset), r->bytes);
    uint64_t extra = r->bytes > res ? r->bytes - res : 0;
    add += extra;
    if (r->kind == AR_REGION_PERSISTENT) pers += extra;
    else act += extra;
  }
  uint64_t projected = mem.accounted_bytes + add;
  if (projected <= limit) return 0;
  return ar_errf(msg, msg_bytes, AR_ENOSPC,
                 "load of '%s' would bring the accounted memory to %" PRIu64 " bytes, over memory_limit %" PRIu64
                 " bytes (raise memory_limit in arenad's config, or unload a model): now %" PRIu64 " (pool %" PRIu64
                 ", model copies %" PRIu64 " with this one's, OpenBLAS %" PRIu64 ", heap %" PRIu64 ", code and stacks %"
                 PRIu64 ", clients' shared memory %" PRIu64 "; RSS %" PRIu64 ") + its pool regions %" PRIu64
                 " (persistent %" PRIu64 " + activation %" PRIu64 ")",
                 name, projected, limit, mem.accounted_bytes, mem.pool_resident_bytes, mem.models_resident_bytes,
                 mem.blas.resident_bytes, mem.heap.in_use_bytes, mem.rest.code_bytes + mem.rest.stack_bytes,
                 mem.shm_resident_bytes, mem.status.rss_bytes, add, pers, act);
}

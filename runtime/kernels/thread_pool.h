/* Internal to the kernel libraries: whether halformer_set_num_threads() has run. */
#ifndef HALFORMER_THREAD_POOL_H
#define HALFORMER_THREAD_POOL_H

int halformer_thread_pool_configured(void);

#endif

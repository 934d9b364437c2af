// greedy: one greedy.json case from llama.cpp's CPU backend.
//
//   greedy MODEL PROMPT NTOKENS KVTYPE
//
// KVTYPE is f16 (llama.cpp's default cache type) or f32. The prompt is
// tokenized with BOS, decoded in one llama_decode, then each next token is
// the argmax of llama_get_logits_ith after each llama_decode (EOS ignored),
// with its log-probability under those logits. 2 threads, flash attention
// off (llama.cpp's default). Prints one JSON object: prompt_ids, tokens,
// logprobs (six decimals).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "llama.h"

static void quiet(enum ggml_log_level, const char *, void *) {}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s MODEL PROMPT NTOKENS f16|f32\n", argv[0]);
        return 2;
    }
    const char *path = argv[1];
    std::string prompt = argv[2];
    int ntok = atoi(argv[3]);
    ggml_type kv;
    if (strcmp(argv[4], "f16") == 0) {
        kv = GGML_TYPE_F16;
    } else if (strcmp(argv[4], "f32") == 0) {
        kv = GGML_TYPE_F32;
    } else {
        fprintf(stderr, "KVTYPE %s: want f16 or f32\n", argv[4]);
        return 2;
    }
    llama_log_set(quiet, nullptr);
    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    llama_model *model = llama_model_load_from_file(path, mp);
    if (!model) {
        fprintf(stderr, "%s: cannot load\n", path);
        return 1;
    }
    const llama_vocab *vocab = llama_model_get_vocab(model);
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 512;
    cp.n_batch = 512;
    cp.n_ubatch = 512;
    cp.n_threads = 2;
    cp.n_threads_batch = 2;
    cp.type_k = kv;
    cp.type_v = kv;
    cp.flash_attn = false;
    llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx) {
        fprintf(stderr, "cannot create a context\n");
        return 1;
    }
    std::vector<llama_token> ids(prompt.size() + 8);
    int n = llama_tokenize(vocab, prompt.c_str(), (int)prompt.size(), ids.data(), (int)ids.size(), true, true);
    if (n < 0) {
        fprintf(stderr, "tokenize failed\n");
        return 1;
    }
    ids.resize(n);
    const int nvocab = llama_vocab_n_tokens(vocab);
    std::vector<llama_token> toks;
    std::vector<double> lps;
    llama_batch batch = llama_batch_get_one(ids.data(), (int)ids.size());
    llama_token next;
    for (int i = 0; i < ntok; i++) {
        if (llama_decode(ctx, batch) != 0) {
            fprintf(stderr, "decode failed at token %d\n", i);
            return 1;
        }
        const float *logits = llama_get_logits_ith(ctx, -1);
        int best = 0;
        for (int j = 1; j < nvocab; j++) {
            if (logits[j] > logits[best]) best = j;
        }
        double mx = logits[best], sum = 0;
        for (int j = 0; j < nvocab; j++) sum += exp((double)logits[j] - mx);
        toks.push_back(best);
        lps.push_back(-log(sum));
        next = best;
        batch = llama_batch_get_one(&next, 1);
    }
    printf("{\"prompt_ids\": [");
    for (size_t i = 0; i < ids.size(); i++) printf("%s%d", i ? ", " : "", ids[i]);
    printf("], \"tokens\": [");
    for (size_t i = 0; i < toks.size(); i++) printf("%s%d", i ? ", " : "", toks[i]);
    printf("], \"logprobs\": [");
    for (size_t i = 0; i < lps.size(); i++) printf("%s%.6f", i ? ", " : "", lps[i]);
    printf("]}\n");
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}

// Package vision is the image side of ttis's accuracy evals: the two
// networks tt-inference-server grades text-to-image and video models with,
// run on the cpu engine's own kernels (runtime/cpu/internal/kernels).
//
// What the reference computes (tenstorrent/tt-inference-server at
// 11ac526e, utils/sdxl_accuracy_utils/, open-clip-torch pinned to 2.26.1 in
// requirements/constraints.txt):
//
//   - CLIP score (clip_encoder.py, sdxl_accuracy_utils.py calculate_metrics,
//     test_module/eval_tests/video_generation_eval_test.py for video frames):
//     open_clip.create_model_and_transforms("ViT-B/32", pretrained="openai"),
//     i.e. OpenAI's CLIP ViT-B/32 (QuickGELU, fp32 on the CPU). The image
//     goes through open_clip's "openai" eval transform (PIL bicubic resize of
//     the shortest side to 224, centre crop 224, RGB, ToTensor, Normalize
//     with OpenAI's mean and std); the prompt through open_clip.tokenize
//     (SimpleTokenizer: ftfy.fix_text, HTML unescaping, whitespace folding,
//     lower case, CLIP's byte-level BPE, 77 tokens with start and end,
//     truncated with the end token kept). The score of one pair is
//     100 × the cosine of image_features and text_features, with no floor
//     at 0 (torchmetrics' CLIPScore clamps at 0; the reference does not use
//     it). See Score.
//   - FID features (fid_score.py, inception.py, a copy of pytorch-fid's
//     InceptionV3): torchvision's inception_v3 with pytorch-fid's
//     FIDInceptionA/C/E_1/E_2 blocks and the TF-ported weights
//     pt_inception-2015-12-05-6726825d.pth; each image is ToTensor'd at its
//     own size, resized by F.interpolate(size=(299, 299), mode="bilinear",
//     align_corners=False) (no antialiasing), scaled to [-1, 1], and the
//     2048-d output of the final average pool is the feature. FID itself
//     (means, covariances, scipy's sqrtm) is the caller's job.
//
// CLIP's weights come from the Hugging Face Hub (PullCLIP: the OpenAI
// checkpoint as transformers publishes it, at a pinned commit, verified and
// cached by runtime/hub, offline from the cache); the FID Inception weights
// are not on the Hub, so the operator supplies the published file and
// OpenInception checks its sha256 (InceptionFile, InceptionURL,
// InceptionSHA256).
//
// Images enter as image.Image and are read as 8-bit RGB, the way PIL's
// convert("RGB") reads a decoded PNG: alpha is dropped, not composited.
// Decoding (PNG, JPEG, video frames) is the caller's.
package vision

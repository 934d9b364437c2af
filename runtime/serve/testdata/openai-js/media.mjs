// Calls a ttis unit's media routes with the official OpenAI SDK, unchanged:
// images.generate, audio.transcriptions.create (a file upload),
// audio.speech.create, embeddings.create and images.edit (file uploads).
// Usage:
//   node media.mjs IMAGE_URL TRANSCRIBE_URL SPEECH_URL EMBEDDING_URL EDIT_URL
// Prints one JSON line with the results; exits non-zero on any failure.
import OpenAI, { toFile } from "openai";

const [imageURL, asrURL, ttsURL, embURL, editURL] = process.argv.slice(2);
if (!editURL) {
  console.error("usage: node media.mjs IMAGE_URL TRANSCRIBE_URL SPEECH_URL EMBEDDING_URL EDIT_URL");
  process.exit(2);
}
const client = (base) => new OpenAI({ baseURL: base + "/v1", apiKey: "unused", maxRetries: 0, timeout: 60000 });

function check(cond, msg) {
  if (!cond) {
    throw new Error(msg);
  }
}

// A 16 kHz mono 16-bit WAV of the given length (a tone).
function wav(seconds) {
  const n = Math.round(seconds * 16000);
  const b = Buffer.alloc(44 + 2 * n);
  b.write("RIFF", 0);
  b.writeUInt32LE(36 + 2 * n, 4);
  b.write("WAVEfmt ", 8);
  b.writeUInt32LE(16, 16);
  b.writeUInt16LE(1, 20);
  b.writeUInt16LE(1, 22);
  b.writeUInt32LE(16000, 24);
  b.writeUInt32LE(32000, 28);
  b.writeUInt16LE(2, 32);
  b.writeUInt16LE(16, 34);
  b.write("data", 36);
  b.writeUInt32LE(2 * n, 40);
  for (let i = 0; i < n; i++) {
    b.writeInt16LE(Math.round(3000 * Math.sin(i / 10)), 44 + 2 * i);
  }
  return b;
}

// Images.
const img = client(imageURL);
const imageModel = (await img.models.list()).data[0].id;
const images = await img.images.generate({ model: imageModel, prompt: "a lighthouse at dusk", n: 2, size: "512x512", response_format: "b64_json" });
check(images.data.length === 2, "images: " + images.data.length);
for (const d of images.data) {
  const png = Buffer.from(d.b64_json, "base64");
  check(png.subarray(1, 4).toString() === "PNG", "images: not a PNG");
  check(png.readUInt32BE(16) === 512 && png.readUInt32BE(20) === 512, "images: size " + png.readUInt32BE(16) + "x" + png.readUInt32BE(20));
}

// Transcription: a file upload (multipart), plain and verbose.
const asr = client(asrURL);
const asrModel = (await asr.models.list()).data[0].id;
const tr = await asr.audio.transcriptions.create({ model: asrModel, file: await toFile(wav(11), "clip.wav") });
check(typeof tr.text === "string" && tr.text.length > 0, "transcription: no text");
const verbose = await asr.audio.transcriptions.create({ model: asrModel, file: await toFile(wav(11), "clip.wav"), response_format: "verbose_json" });
check(Math.abs(verbose.duration - 11) < 0.01 && verbose.segments.length === 3, "transcription: verbose " + JSON.stringify(verbose).slice(0, 200));
let status = 0;
try {
  await asr.audio.transcriptions.create({ model: asrModel, file: await toFile(Buffer.from("this is not audio"), "clip.wav") });
} catch (e) {
  status = e.status;
}
check(status === 400, "transcription of text: status " + status);

// Speech.
const tts = client(ttsURL);
const ttsModel = (await tts.models.list()).data[0].id;
const speech = await tts.audio.speech.create({ model: ttsModel, voice: "alloy", input: "Hello from a simulated speaker.", response_format: "wav" });
const audio = Buffer.from(await speech.arrayBuffer());
check(audio.subarray(0, 4).toString() === "RIFF" && audio.subarray(8, 12).toString() === "WAVE", "speech: not a WAV");
const speechSeconds = audio.readUInt32LE(40) / audio.readUInt32LE(28);

// Embeddings: the SDK asks for base64 by default and decodes it.
const emb = client(embURL);
const embModel = (await emb.models.list()).data[0].id;
const e1 = await emb.embeddings.create({ model: embModel, input: ["the same text", "the same text", "another text"] });
const norm = (v) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));
const dot = (a, b) => a.reduce((s, x, i) => s + x * b[i], 0);
check(e1.data.length === 3 && Math.abs(norm(e1.data[0].embedding) - 1) < 1e-4, "embeddings: norm " + norm(e1.data[0].embedding));
check(Math.abs(dot(e1.data[0].embedding, e1.data[1].embedding) - 1) < 1e-4, "embeddings: same text, different vectors");
const e2 = await emb.embeddings.create({ model: embModel, input: "short", encoding_format: "float", dimensions: 128 });
check(e2.data[0].embedding.length === 128 && e2.usage.prompt_tokens > 0, "embeddings: dimensions " + e2.data[0].embedding.length);

// Inpainting: the generated picture and a mask, uploaded.
const edit = client(editURL);
const editModel = (await edit.models.list()).data[0].id;
const picture = Buffer.from(images.data[0].b64_json, "base64");
const edited = await edit.images.edit({
  model: editModel,
  prompt: "a red door",
  image: await toFile(picture, "picture.png", { type: "image/png" }),
  mask: await toFile(picture, "mask.png", { type: "image/png" }),
  size: "512x512",
  response_format: "b64_json",
});
const editedPNG = Buffer.from(edited.data[0].b64_json, "base64");
check(editedPNG.subarray(1, 4).toString() === "PNG" && editedPNG.readUInt32BE(16) === 512, "edit: not a 512x512 PNG");

console.log(JSON.stringify({ edits: edited.data.length, images: images.data.length, transcript: tr.text, segments: verbose.segments.length, speechSeconds, dims: e1.data[0].embedding.length }));

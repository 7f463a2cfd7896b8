// The page at `/`: a prompt form (with image upload for the models that take images, and a LoRA
// picker over GET /v1/loras for those that switch LoRAs), the queue
// with live progress (the events stream) and the finished videos playing. Plain HTML, CSS and JS
// in one string: no build step, nothing fetched from elsewhere. With --api-key the page asks for
// the key and sends it as a Bearer header on every call (videos are fetched as blobs, the events
// stream read with fetch), so the key never goes in a URL. tests/serve/test_web_page.cpp drives it
// in headless Chromium.
#include "serve/server.h"

namespace vidax::serve {

const std::string& web_page_html() {
  static const std::string page = R"HTML(<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>vidax</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font-family:system-ui,sans-serif;margin:0;background:#f4f4f6;color:#222}
header{background:#222;color:#fff;padding:.6em 1em;font-weight:600}
main{display:grid;grid-template-columns:minmax(260px,360px) 1fr;gap:1em;padding:1em}
form,section{background:#fff;border-radius:8px;padding:1em;box-shadow:0 1px 3px #0002}
label{display:block;margin:.4em 0 .1em;font-size:.85em;color:#555}
input,select,textarea{width:100%;box-sizing:border-box;padding:.35em;font:inherit}
textarea{height:6em}.row{display:flex;gap:.5em}.row>div{flex:1}
button{margin-top:.8em;padding:.5em 1.2em;font:inherit;cursor:pointer}
.job{border-bottom:1px solid #eee;padding:.6em 0}.job:last-child{border:0}
.meta{font-size:.8em;color:#666}.err{color:#b00020;font-size:.85em}
progress{width:100%}video{max-width:100%;display:block;margin-top:.4em;background:#000}
</style></head><body>
<header>vidax serve</header>
<main>
<form id="f">
  <label>API key (only if the server was started with --api-key)</label><input id="key" type="password" autocomplete="off">
  <label>Model</label><select id="model"></select>
  <label>Prompt</label><textarea id="prompt" required></textarea>
  <label>Negative prompt (empty: the model's default)</label><input id="negative_prompt">
  <div class="row"><div><label>Size (WxH)</label><input id="size"></div><div><label>Frames</label><input id="frames" type="number" min="1"></div></div>
  <div class="row"><div><label>Steps</label><input id="steps" type="number" min="1"></div><div><label>Seed (empty: random)</label><input id="seed" type="number"></div></div>
  <div class="row"><div><label>Guidance</label><input id="guidance" type="number" step="any"></div><div><label>Shift</label><input id="shift" type="number" step="any"></div></div>
  <div id="images" hidden>
    <label id="input_reference_label">First frame (image-to-video; the video takes its aspect ratio)</label>
    <input id="input_reference" type="file" accept="image/png,image/jpeg,image/webp">
    <div id="last_frame_row" hidden><label id="last_frame_label">Last frame (first-last-frame)</label>
    <input id="last_frame" type="file" accept="image/png,image/jpeg,image/webp"></div>
  </div>
  <div id="loras" hidden>
    <label>LoRAs (from the server's LoRA folder, applied to this job only)</label>
    <div id="lora_rows"></div>
    <div class="row"><div><select id="lora_pick"></select></div>
    <div style="flex:0 0 5em"><input id="lora_scale" type="number" step="any" value="1" title="scale"></div>
    <div style="flex:0 0 auto"><button type="button" id="lora_add" style="margin-top:0">add</button></div></div>
  </div>
  <button type="submit">Generate</button>
  <div id="formerr" class="err"></div>
</form>
<section><h3 style="margin-top:0">Videos</h3><div id="jobs">loading...</div></section>
</main>
<script>
const $ = id => document.getElementById(id);
$('key').value = localStorage.getItem('vidax_key') || '';
$('key').onchange = () => { localStorage.setItem('vidax_key', $('key').value); refresh(); };
const headers = () => $('key').value ? {Authorization: 'Bearer ' + $('key').value} : {};
async function api(path, opts = {}) {
  const r = await fetch(path, {...opts, headers: {...headers(), ...(opts.headers || {})}});
  if (!r.ok) { let m = r.status + ''; try { m = (await r.json()).error.message; } catch (e) {} throw new Error(m); }
  return r;
}
let models = {}, loraFiles = [], chosen = [];
async function loadModels() {
  const j = await (await api('/v1/models')).json();
  try {  // the LoRA picker: the files GET /v1/loras lists, for the models that switch LoRAs
    loraFiles = (await (await api('/v1/loras')).json()).data;
  } catch (e) { loraFiles = []; }
  $('lora_pick').innerHTML = '';
  for (const f of loraFiles) $('lora_pick').add(new Option(f.name || f.path, f.path));
  // The model list last, then its defaults at once: a filled list means a filled form.
  $('model').innerHTML = '';
  for (const m of j.data) { models[m.id] = m; $('model').add(new Option(m.id, m.id)); }
  fillDefaults();
}
function showLoras() {
  $('lora_rows').innerHTML = chosen.map((l, i) => '<div class="meta lora">' + esc(l.path) + ' × ' + l.scale +
    ' <button type="button" data-unlora="' + i + '" style="margin:0;padding:0 .4em">remove</button></div>').join('');
}
$('lora_add').onclick = () => {
  const scale = parseFloat($('lora_scale').value);
  if (!$('lora_pick').value || !isFinite(scale)) return;
  chosen.push({path: $('lora_pick').value, scale}); showLoras();
};
function fillDefaults() {
  const m = models[$('model').value] || {}, d = m.defaults; if (!d) return;
  // The image fields show for the models that take them (their tasks, as GET /v1/models lists them).
  const tasks = m.tasks || [], takes = t => tasks.includes(t);
  $('images').hidden = !(takes('i2v') || takes('flf2v') || takes('ti2v'));
  $('last_frame_row').hidden = !takes('flf2v');
  $('loras').hidden = !(m.loras && loraFiles.length);
  // Required as the API requires them: the first frame on a model without text-to-video, the
  // last one on a first-last-frame model without plain image-to-video.
  $('input_reference').required = !$('images').hidden && !takes('t2v') && !takes('ti2v');
  $('last_frame').required = takes('flf2v') && !takes('i2v');
  $('last_frame_label').textContent = 'Last frame (first-last-frame' + ($('last_frame').required ? ')' : ', optional)');
  $('size').placeholder = d.size; $('frames').placeholder = d.frames; $('steps').placeholder = d.steps;
  $('guidance').placeholder = d.guidance; $('shift').placeholder = d.shift;
}
$('model').onchange = fillDefaults;
$('f').onsubmit = async ev => {
  ev.preventDefault(); $('formerr').textContent = '';
  const body = {model: $('model').value, prompt: $('prompt').value};
  for (const k of ['negative_prompt', 'size']) if ($(k).value) body[k] = $(k).value;
  for (const k of ['frames', 'steps', 'seed']) if ($(k).value !== '') body[k] = parseInt($(k).value, 10);
  for (const k of ['guidance', 'shift']) if ($(k).value !== '') body[k] = parseFloat($(k).value);
  if (!$('loras').hidden && chosen.length) body.lora = chosen.map(l => ({path: l.path, scale: l.scale}));
  // With an image the request is a multipart form (the only way the API takes images): the same
  // fields as text, the images as files.
  const files = [];
  if (!$('images').hidden) for (const k of ['input_reference', 'last_frame'])
    if ((k === 'input_reference' || !$('last_frame_row').hidden) && $(k).files.length) files.push([k, $(k).files[0]]);
  let opts;
  if (files.length) {
    const form = new FormData();
    for (const [k, v] of Object.entries(body)) form.append(k, typeof v === 'object' ? JSON.stringify(v) : String(v));
    for (const [k, f] of files) form.append(k, f, f.name);
    opts = {method: 'POST', body: form};
  } else {
    opts = {method: 'POST', headers: {'Content-Type': 'application/json'}, body: JSON.stringify(body)};
  }
  try {
    await api('/v1/videos', opts);
    refresh();
  } catch (e) { $('formerr').textContent = e.message; }
};
const watching = {}, shown = {};
async function watch(id) {  // the events stream, read with fetch so that the key goes in a header
  if (watching[id]) return; watching[id] = true;
  try {
    const r = await api('/v1/videos/' + id + '/events');
    const rd = r.body.getReader(), dec = new TextDecoder(); let buf = '';
    for (;;) {
      const {value, done} = await rd.read(); if (done) break;
      buf += dec.decode(value, {stream: true});
      let i; while ((i = buf.indexOf('\n\n')) >= 0) {
        const block = buf.slice(0, i); buf = buf.slice(i + 2);
        const ev = (block.match(/^event: (.*)$/m) || [])[1], data = (block.match(/^data: (.*)$/m) || [])[1];
        if (ev && data) render(JSON.parse(data));
      }
    }
  } catch (e) {}
  delete watching[id]; refresh();
}
function render(v) {
  let el = document.getElementById('job-' + v.id);
  if (!el) { el = document.createElement('div'); el.className = 'job'; el.id = 'job-' + v.id; $('jobs').prepend(el); }
  let eta = v.eta_seconds != null ? ', about ' + Math.ceil(v.eta_seconds) + ' s left' : '';
  // A finished job's size is what it wrote (an image-to-video job's comes from its image).
  const size = v.result ? v.result.size + (v.result.size_from === 'input_reference' ? ' (from the image)' : '') : v.size;
  let html = '<div><b>' + esc(v.prompt) + '</b></div><div class="meta">' + v.id + ' · ' + esc(v.model) + ' · <span class="size">' + size + '</span>' +
    ' · ' + v.frames + ' frames · ' + v.steps + ' steps · seed ' + v.seed + ' · <span class="status">' + v.status + '</span>' +
    (v.lora && v.lora.length ? ' · LoRA ' + v.lora.map(l => esc(l.path) + ' × ' + l.scale).join(', ') : '') +
    (v.step ? ' (step ' + v.step + '/' + v.steps + eta + ')' : '') + '</div>';
  if (v.status === 'queued' || v.status === 'in_progress')
    html += '<progress max="100" value="' + v.progress + '"></progress> <button data-del="' + v.id + '">cancel</button>';
  if (v.error) html += '<div class="err">' + esc(v.error.message) + '</div>';
  if (v.status === 'completed') html += '<video controls loop muted autoplay id="vid-' + v.id + '"></video>';
  if (v.status !== 'queued' && v.status !== 'in_progress') html += ' <button data-del="' + v.id + '">delete</button>';
  const keep = shown[v.id] && v.status === 'completed' ? el.querySelector('video') : null;
  el.innerHTML = html;
  if (keep) el.replaceChild(keep, el.querySelector('video'));
  else if (v.status === 'completed') loadVideo(v.id);
  if (v.status === 'queued' || v.status === 'in_progress') watch(v.id);
}
async function loadVideo(id) {
  shown[id] = true;
  try {
    const blob = await (await api('/v1/videos/' + id + '/content')).blob();
    const el = document.getElementById('vid-' + id); if (el) el.src = URL.createObjectURL(blob);
  } catch (e) { delete shown[id]; }
}
document.addEventListener('click', async ev => {
  const un = ev.target.dataset && ev.target.dataset.unlora;
  if (un !== undefined) { chosen.splice(parseInt(un, 10), 1); showLoras(); return; }
  const id = ev.target.dataset && ev.target.dataset.del; if (!id) return;
  try { await api('/v1/videos/' + id, {method: 'DELETE'}); } catch (e) { alert(e.message); }
  const el = document.getElementById('job-' + id); if (el && ev.target.textContent === 'delete') el.remove();
  refresh();
});
function esc(s) { return String(s).replace(/[&<>"']/g, c => '&#' + c.charCodeAt(0) + ';'); }
async function refresh() {
  try {
    const j = await (await api('/v1/videos?limit=50&order=asc')).json();
    if ($('jobs').textContent === 'loading...' || $('jobs').querySelector('.err')) $('jobs').innerHTML = '';
    for (const v of j.data) render(v);
    if (!Object.keys(models).length) await loadModels();
  } catch (e) { $('jobs').innerHTML = '<div class="err">' + esc(e.message) + '</div>'; }
}
refresh(); setInterval(refresh, 5000);
</script></body></html>
)HTML";
  return page;
}

}  // namespace vidax::serve

# SPDX-License-Identifier: Apache-2.0
"""Seeing a run: a self-contained HTML timeline and a Chrome trace-event
JSON export, both made from the world log of one whole run.

The log ring keeps the newest LOG_KEPT entries, so a run whose timeline is
asked for runs with a ring big enough for all of it (Loop._log_keep): a
failing seed in a sweep is run once more with that ring (the seed replays
the run exactly), and Replay.run(..., timeline=...) keeps it from the start.
A run that asks for neither pays nothing.

Messages: the log's send entry holds (src, dst, payload, outcome) and its
delivery entry (dst, src, payload, outcome); the payload is the very object
sent (messages travel by reference). A delivery is paired with the oldest
unpaired send of the same (src, dst, payload identity): two sends of one
object on one link may be paired crosswise, and then the two arrows carry
the same payload.

Await sites: while a timeline's run runs, Sites (the loop's log hook and
the receive hook, installed for that run only) notes for each log entry
the innermost frame of user code — not askew's, not the standard
library's — that made it: the line that sent, emitted or injected the
fault; for a delivery, the line whose `await node.recv()` took the
message. Runs without a timeline never see either hook.
"""

from __future__ import annotations

import html
import json
import os
import sys
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import FrameType, TracebackType
from typing import Any

from .. import _core
from .._loop import kinds
from .._loop.frames import PACKAGE_DIR
from .._loop.text import short_repr
from .._world.log import event_from_entry
from .._world.node import receives_seen
from .._world.states import Change

# Entries a timeline's run keeps: the whole of any run that fits in memory
# (an entry is 32 bytes plus the payload it holds on to).
TIMELINE_KEPT = 4_000_000
# Events the page draws at once: a longer run is paged by time, and says so.
PAGE_EVENTS = 5_000

_SENT, _SENT_TWICE, _DELIVERED = 0, 1, 2
Entry = tuple[int, int, int, int, int, object]


# ---- await sites -----------------------------------------------------------------

# Path -> how a site names it, or None for askew's and the standard
# library's files; filled by the first timeline's run (importing this
# module costs a run nothing).
_shown: dict[str, str | None] = {}


def _shown_path(path: str) -> str | None:
    import sysconfig

    paths = sysconfig.get_paths()
    roots = {os.path.abspath(paths[k]) + os.sep for k in ("stdlib", "platstdlib")}
    if path.startswith((*roots, PACKAGE_DIR, "<frozen")):
        return None
    if path.startswith("<"):
        return path
    shown = os.path.relpath(path)  # relative to where the run started, if under it
    return path if shown.startswith(".." + os.sep) else shown


def user_site(frame: FrameType | None, stop: str) -> str | None:
    """`file:line in function` of the innermost frame of user code from
    `frame` outwards, or None if a frame of the file `stop` (the runner
    that runs the test) comes first: the loop or askew did it, not a line
    of the user's."""
    while frame is not None:
        code = frame.f_code
        path = code.co_filename
        if path == stop:
            return None
        try:
            shown = _shown[path]
        except KeyError:
            shown = _shown[path] = _shown_path(path)
        if shown is not None:
            return f"{shown}:{frame.f_lineno} in {code.co_qualname}"
        frame = frame.f_back
    return None


class Sites:
    """The await site of each log entry of the run made while installed (a
    `with` block around one timeline run), by entry number.

    The loop calls it after each entry it logs (Loop._log_hook): an entry
    logged inside a call into C made from Python (Network.send_from,
    Loop._log_emit...) gets the innermost user frame of that call's caller;
    one the loop logs in its own run (a delivery, a timer's) reaches the
    runner first and gets none. A delivery waits for the receiving task's
    `Node.recv` to return its message: then it gets the line that awaited
    it. Nothing else runs per call: a run pays per entry."""

    def __init__(self, loop: Any, runner: str) -> None:
        self._runner = runner  # the file of the frame that runs the test: walks end there
        self._loop = loop
        self._count = loop._log_count
        self._recent = loop._log_recent
        self._seen = 0
        self.sites: dict[int, str] = {}
        # (src, dst, payload identity) -> entry numbers of deliveries not yet received
        self._unread: dict[tuple[int, int, int], deque[int]] = {}

    def __enter__(self) -> Sites:
        receives_seen(self._received)
        self._loop._log_hook(self._logged)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._loop._log_hook(None)
        receives_seen(None)

    def _logged(self) -> None:
        """The loop just logged an entry: the newest."""
        k = self._count() - 1
        if k < self._seen:  # the loop's reset cleared the log: a new run
            self.sites.clear()
            self._unread.clear()
        self._seen = k + 1
        entry = self._recent(1)[0]
        if entry[1] == kinds.NET_DELIVERY and entry[4] == _DELIVERED:
            self._unread.setdefault((entry[3], entry[2], id(entry[5])), deque()).append(k)
            return
        site = user_site(sys._getframe(1), self._runner)
        if site is not None:
            self.sites[k] = site

    def _received(self, msg: _core.Message, frame: FrameType) -> None:
        """Node.recv returned msg to the coroutine of `frame`."""
        queue = self._unread.get((msg.src, msg.dst, id(msg.payload)))
        if queue:
            k = queue.popleft()
            site = user_site(frame, self._runner)
            if site is not None:
                self.sites[k] = site


# ---- the run's data ----------------------------------------------------------------


@dataclass
class RunData:
    """One run as the timeline draws it; times in virtual nanoseconds."""

    title: str
    nodes: list[int] = field(default_factory=list)
    # (send_ns, deliver_ns or None, src, dst, payload repr, outcome text,
    #  the user's line that sent it, the user's line that received it)
    messages: list[tuple[int, int | None, int, int, str, str, str | None, str | None]] = field(
        default_factory=list
    )
    # (t_ns, lane (-1: the test body), kind, text, the user's line that made it)
    events: list[tuple[int, int, str, str, str | None]] = field(default_factory=list)
    failure: tuple[int, str] | None = None
    complete: bool = True  # False if the ring overflowed
    # The nodes' state over time (askew/_world/states.py): (t_ns, node,
    # attribute, value repr), each a change.
    states: list[tuple[int, int, str, str]] = field(default_factory=list)
    # How a failed run differs from the nearest passing seed of its sweep
    # (the report's lines, askew/_report/report.py neighbour_lines).
    compared: list[str] = field(default_factory=list)

    @property
    def delivered(self) -> int:
        return sum(1 for m in self.messages if m[5] == "delivered")


def collect(
    loop: Any,
    title: str,
    sites: dict[int, str] | None = None,
    states: list[Change] | None = None,
) -> RunData:
    """The run the loop's log holds, paired and named; `sites` (Sites.sites
    of the same run) gives each entry's await site, `states` its nodes'
    state over time."""
    entries: list[Entry] = loop._log_recent(TIMELINE_KEPT)
    count = int(loop._log_count())
    data = RunData(title, complete=count <= len(entries))
    data.states = [(round(c.t * 1e9), c.node, c.name, c.value) for c in states or ()]
    first = count - len(entries)  # the number of entries[0]
    site = (sites or {}).get
    waiting: dict[tuple[int, int, int], deque[int]] = {}
    nodes: set[int] = set()
    # A broadcast logs one object once per peer: its repr is made once (the
    # log holds the payloads, so their ids stay theirs while this runs).
    shown: dict[int, str] = {}
    for number, entry in enumerate(entries, first):
        t_ns, kind, node, peer, outcome, detail = entry
        if kind == kinds.NET_SEND:
            nodes.update((node, peer))
            name = _outcome(outcome)
            text = shown.get(id(detail))
            if text is None:
                text = shown[id(detail)] = short_repr(detail)
            sent = (t_ns, None, node, peer, text, name, site(number), None)
            if outcome in (_SENT, _SENT_TWICE):
                key = (node, peer, id(detail))
                for _ in range(2 if outcome == _SENT_TWICE else 1):
                    waiting.setdefault(key, deque()).append(len(data.messages))
                    data.messages.append(sent)
            else:  # dropped as it was sent
                data.messages.append(sent)
            continue
        if kind == kinds.NET_DELIVERY:
            src, dst = peer, node
            queue = waiting.get((src, dst, id(detail)))
            if queue:
                k = queue.popleft()
                m = data.messages[k]
                arrived = (t_ns, src, dst, m[4], _outcome(outcome), m[6], site(number))
                data.messages[k] = (m[0], *arrived)
            continue
        event = event_from_entry(entry)
        lane = -1 if node < 0 else node
        if lane >= 0:
            nodes.add(lane)
        if event.kind in ("assert", "error"):
            data.failure = (t_ns, event.text)
        data.events.append((t_ns, lane, kinds.NAMES.get(kind, "event"), event.text, site(number)))
    nodes.update(c[1] for c in data.states)
    data.nodes = sorted(n for n in nodes if n >= 0)
    return data


def _outcome(code: int) -> str:
    return kinds.OUTCOMES[code] if 0 <= code < len(kinds.OUTCOMES) else "?"


# ---- the HTML page ---------------------------------------------------------------

_STYLE = """
body{font:13px system-ui,sans-serif;margin:0;color:#222}
header{padding:6px 10px;background:#f4f4f4;border-bottom:1px solid #ccc}
header button{margin-right:4px}
#note{color:#a40}
svg{display:block;cursor:grab;user-select:none}
.lane{stroke:#bbb}
.lanelabel{font-weight:bold}
.msg{stroke:#36c;stroke-width:1.2}
.msg.dropped{stroke:#d33;stroke-dasharray:3 2}
.msg.twice{stroke:#c6c}
.ev circle{fill:#777}
.ev.node circle,.ev.world circle{fill:#2a2}
.ev.crash rect{fill:#d33}.ev.restart rect{fill:#393}
.ev.fault rect{fill:#e90}.ev.net rect{fill:#06c}
.ev.connect circle,.ev.accept circle,.ev.close circle,.ev.reset circle,.ev.refuse circle{fill:#960}
.failure{stroke:#d00;stroke-width:2}
.axis{fill:#555;font-size:11px}
#summary{display:none}
#compared{margin:4px 10px;font-size:11px;color:#444}
.span.cut{fill:#06c;opacity:.08}.span.down{fill:#d33;opacity:.15}.span.paused{fill:#e90;opacity:.18}
.band{stroke:#fff;stroke-width:.5}.bandlabel{font-size:10px;fill:#222;pointer-events:none}
.failurelabel{fill:#d00;font-weight:bold;font-size:11px}
#legend{padding:3px 10px;font-size:11px;color:#444;border-bottom:1px solid #ddd}
#legend svg{display:inline;vertical-align:middle;margin:0 3px 0 10px;cursor:default}
#density{cursor:pointer;border-bottom:1px solid #ddd}
#card{position:fixed;display:none;background:#fffbe6;border:1px solid #c9b458;padding:5px 8px;
 white-space:pre;font:12px ui-monospace,monospace;box-shadow:2px 2px 6px #0003;z-index:9;
 max-width:60em;overflow:hidden}
"""

# Draws the current page of events in SVG: lanes, arrows, markers; the
# wheel zooms around the pointer, a drag pans, <title>s give the hover.
_SCRIPT = r"""
const errors=[];
window.addEventListener('error',ev=>{errors.push(String(ev.message));
 document.getElementById('summary').textContent=JSON.stringify({errors:errors});});
(function(){
const D=JSON.parse(document.getElementById('data').textContent);
const lanes=[-1].concat(D.nodes), TOP=34, LEFT=110, BAND=14, BANDS_MAX=3;
// State bands: per node, its attributes in the order they first changed.
const attrs={};D.states.forEach(c=>{const a=attrs[c[1]]=attrs[c[1]]||[];
 if(!a.includes(c[2]))a.push(c[2]);});
const most=Math.min(BANDS_MAX,Math.max(0,...Object.values(attrs).map(a=>a.length)));
const LH=46+BAND*most;
const END=D.pages[D.pages.length-1][1];
function hue(text){let h=0;for(let i=0;i<text.length;i++)h=(h*31+text.charCodeAt(i))>>>0;
 return 'hsl('+Math.round((h*137.508)%360)+',65%,75%)';}
const laneY=n=>TOP+lanes.indexOf(n)*LH+LH/2;
const svg=document.getElementById('view'), NS='http://www.w3.org/2000/svg';
let page=0, t0=0, t1=1;
function mk(tag,attrs,parent,title){const e=document.createElementNS(NS,tag);
 for(const k in attrs)e.setAttribute(k,attrs[k]);
 if(title){const t=document.createElementNS(NS,'title');t.textContent=title;e.appendChild(t);
  e.setAttribute('data-tip',title);}
 (parent||svg).appendChild(e);return e;}
function pageRange(){return D.pages[page];}
function fit(){const r=pageRange();t0=r[0];t1=Math.max(r[1],r[0]+1e6);
 const pad=(t1-t0)*0.02;t0-=pad;t1+=pad;}
function sec(ns){return (ns/1e9).toFixed(6)+'s';}
function draw(){
 while(svg.firstChild)svg.removeChild(svg.firstChild);
 const W=Math.max(600,window.innerWidth-20), H=TOP+lanes.length*LH+10;
 svg.setAttribute('width',W);svg.setAttribute('height',H);
 const X=t=>LEFT+(t-t0)/(t1-t0)*(W-LEFT-10);
 const r=pageRange(), inPage=t=>t>=r[0]&&t<=r[1];
 for(let k=0;k<=8;k++){const t=t0+(t1-t0)*k/8;
  mk('text',{x:X(t),y:14,'class':'axis','text-anchor':'middle'}).textContent=(t/1e9).toFixed(3)+'s';}
 lanes.forEach(n=>{const y=laneY(n);mk('line',{x1:LEFT,x2:W,y1:y,y2:y,'class':'lane'});
  mk('text',{x:6,y:y+4,'class':'lanelabel'}).textContent=n<0?'test body':'node '+n;});
 let bands=0;
 Object.keys(attrs).forEach(key=>{const n=Number(key);attrs[key].slice(0,BANDS_MAX).forEach((a,i)=>{
  const seq=D.states.filter(c=>c[1]===n&&c[2]===a),y=laneY(n)+9+i*BAND;
  seq.forEach((c,j)=>{const from=c[0],to=j+1<seq.length?seq[j+1][0]:END;
   if(to<t0||from>t1)return;const x0=Math.max(LEFT,X(from)),x1=Math.min(W,X(to));
   if(x1<=x0)return;bands++;
   mk('rect',{x:x0,y:y,width:Math.max(1,x1-x0),height:BAND-2,fill:hue(c[3]),'class':'band'},null,
    'node '+n+': '+a+' = '+c[3]+'\nfrom '+sec(from)+(j+1<seq.length?' to '+sec(to):' to the end'));
   if(x1-x0>40)mk('text',{x:x0+3,y:y+BAND-4,'class':'bandlabel'}).textContent=
    (a+'='+c[3]).slice(0,Math.floor((x1-x0-6)/6));});
  mk('text',{x:14,y:y+BAND-4,'class':'axis'}).textContent=a.slice(0,14);});});
 let arrows=0,drops=0;
 D.messages.forEach(m=>{const s=m[0],d=m[1];if(!inPage(s)&&!(d!==null&&inPage(d)))return;
  const tip=m[2]+' -> '+m[3]+'  '+m[4]+'\n'+m[5]+'\nsent '+sec(s)+(m[6]?' by '+m[6]:'')
   +(d!==null?'\narrived '+sec(d):'')+(m[7]?'\nawaited at '+m[7]:'');
  if(d===null||m[5]!=='delivered'){drops++;const end=d===null?s+(t1-t0)*0.01:d;
   mk('line',{x1:X(s),y1:laneY(m[2]),x2:X(end),y2:(laneY(m[2])+laneY(m[3]))/2,
    'class':'msg dropped'},null,tip);return;}
  arrows++;mk('line',{x1:X(s),y1:laneY(m[2]),x2:X(d),y2:laneY(m[3]),'class':'msg delivered',
   'marker-end':'url(#head)'},null,tip);});
 const defs=mk('defs',{});
 const mh=mk('marker',{id:'head',markerWidth:6,markerHeight:6,refX:5,refY:3,orient:'auto'},defs);
 mk('path',{d:'M0,0 L6,3 L0,6 z',fill:'#36c'},mh);
 spans().forEach(s=>{const y=s[0]<0?TOP:laneY(s[0])-LH/2+4,h=s[0]<0?lanes.length*LH:LH-8;
  mk('rect',{x:X(s[1]),y:y,width:Math.max(1,X(s[2])-X(s[1])),height:h,'class':'span '+s[3]},null,
   s[4]+'\n'+sec(s[1])+' .. '+sec(s[2]));});
 D.events.forEach(e=>{if(!inPage(e[0]))return;const x=X(e[0]);
  const g=mk('g',{'class':'ev '+e[2]},null,
   sec(e[0])+'  '+e[2]+'\n'+e[3]+(e[4]?'\nat '+e[4]:''));
  if(e[1]<0&&(e[2]==='net'||e[2]==='fault')){
   mk('line',{x1:x,x2:x,y1:TOP,y2:TOP+lanes.length*LH,stroke:'#06c','stroke-dasharray':'4 3'},g);
   mk('text',{x:x+3,y:TOP+10,'class':'axis'},g).textContent=e[3].slice(0,30);}
  else if(['crash','restart','fault','net'].includes(e[2]))
   mk('rect',{x:x-4,y:laneY(e[1])-8,width:8,height:16},g);
  else mk('circle',{cx:x,cy:laneY(e[1]),r:4},g);});
 if(D.failure&&inPage(D.failure[0])){const x=X(D.failure[0]);
  mk('line',{x1:x,x2:x,y1:TOP-6,y2:TOP+lanes.length*LH,'class':'failure',id:'failureline'},null,
   'failure at '+sec(D.failure[0])+'\n'+D.failure[1]);
  const right=x>W*0.6;
  mk('text',{x:right?x-4:x+4,y:TOP-8,'class':'failurelabel','text-anchor':right?'end':'start'})
   .textContent='failure: '+D.failure[1].slice(0,80);}
 drawDensity(W);
 document.getElementById('summary').textContent=JSON.stringify(
  {lanes:svg.querySelectorAll('.lanelabel').length,arrows:arrows,dropped:drops,
   page:page,pages:D.pages.length,bands:bands,faults:faults.length,
   legend:document.querySelectorAll('#legend svg').length,
   failureLabel:svg.querySelectorAll('.failurelabel').length,errors:errors});
 document.getElementById('pageinfo').textContent='page '+(page+1)+' of '+D.pages.length;
}
// Faults in force over a time: a partition or cut until the heal (all
// lanes), a crash until its restart, a pause until its resume (one lane).
function spans(){const out=[],open={},end=D.pages[D.pages.length-1][1];
 const close=(key,t,cls)=>{(open[key]||[]).forEach(o=>out.push([o[0],o[1],t,cls,o[2]]));
  delete open[key];};
 const start=(key,e)=>{(open[key]=open[key]||[]).push([e[1],e[0],e[3]]);};
 D.events.forEach(e=>{const t=e[3],k=e[2];
  if(k==='net'&&/^(partition|cut|isolate)/.test(t))start('cut',e);
  else if(k==='net'&&t==='heal')close('cut',e[0],'cut');
  else if(k==='crash')start('down'+e[1],e);
  else if(k==='restart')close('down'+e[1],e[0],'down');
  else if(k==='fault'&&/^pause /.test(t))start('paused'+e[1],e);
  else if(k==='fault'&&/^resume /.test(t))close('paused'+e[1],e[0],'paused');});
 Object.keys(open).forEach(key=>close(key,end,key.replace(/[0-9]+$/,'')));
 return out;}
// The fault index: every fault, partition, heal and the failure, to jump to.
const faults=D.events.filter(e=>['crash','restart','fault'].includes(e[2])||
 (e[2]==='net'&&e[1]<0)).map(e=>[e[0],e[2]+' '+e[3]]);
if(D.failure)faults.push([D.failure[0],'failure: '+D.failure[1]]);
faults.sort((a,b)=>a[0]-b[0]);
function jump(t){let p=D.pages.findIndex(r=>t>=r[0]&&t<=r[1]);
 if(p<0)p=D.pages.findIndex(r=>t<r[0]);if(p<0)p=D.pages.length-1;page=p;fit();
 const span=(t1-t0)*0.1;t0=t-span/2;t1=t+span/2;draw();}
const sel=document.getElementById('faults');
faults.forEach((f,i)=>{const o=document.createElement('option');o.value=i;
 o.textContent=sec(f[0])+'  '+f[1].slice(0,60);sel.appendChild(o);});
sel.onchange=()=>{if(sel.value!=='')jump(faults[Number(sel.value)][0]);};
// The density view: how much happens over the whole run, faults in red,
// the failure as a line, the shown window as a box; a click jumps there.
const dens=document.getElementById('density');
function drawDensity(W){while(dens.firstChild)dens.removeChild(dens.firstChild);
 const H=26,first=D.pages[0][0],span=Math.max(1,END-first),bins=200,counts=new Array(bins).fill(0);
 dens.setAttribute('width',W);dens.setAttribute('height',H);
 const bx=t=>LEFT+(t-first)/span*(W-LEFT-10);
 const add=t=>{counts[Math.min(bins-1,Math.floor((t-first)/span*bins))]++;};
 D.messages.forEach(m=>add(m[0]));D.events.forEach(e=>add(e[0]));
 const top=Math.max(1,...counts),bw=(W-LEFT-10)/bins;
 const lbl=document.createElementNS(NS,'text');lbl.setAttribute('x',6);lbl.setAttribute('y',16);
 lbl.setAttribute('class','axis');lbl.textContent='whole run';dens.appendChild(lbl);
 counts.forEach((c,i)=>{if(!c)return;const h=Math.max(1,c/top*(H-4));
  const r=document.createElementNS(NS,'rect');r.setAttribute('x',LEFT+i*bw);r.setAttribute('y',H-h);
  r.setAttribute('width',Math.max(1,bw-0.5));r.setAttribute('height',h);r.setAttribute('fill','#9ab');
  dens.appendChild(r);});
 faults.forEach(f=>{const l=document.createElementNS(NS,'line');const x=bx(f[0]);
  l.setAttribute('x1',x);l.setAttribute('x2',x);l.setAttribute('y1',0);l.setAttribute('y2',H);
  l.setAttribute('stroke',f[1].startsWith('failure')?'#d00':'#e90');
  l.setAttribute('stroke-width',f[1].startsWith('failure')?2:1);dens.appendChild(l);});
 const v=document.createElementNS(NS,'rect');v.setAttribute('x',bx(Math.max(t0,first)));
 v.setAttribute('y',1);v.setAttribute('width',Math.max(2,bx(Math.min(t1,END))-bx(Math.max(t0,first))));
 v.setAttribute('height',H-2);v.setAttribute('fill','none');v.setAttribute('stroke','#333');
 dens.appendChild(v);}
dens.addEventListener('click',ev=>{const W=dens.clientWidth,first=D.pages[0][0];
 jump(first+(ev.offsetX-LEFT)/(W-LEFT-10)*Math.max(1,END-first));});
// Hover cards: the details of what is under the pointer, in the page (so
// a screenshot shows them); a click pins one, #card=failure opens the
// failure's.
const card=document.getElementById('card');let pinned=false;
function show(el,x,y){card.textContent=el.getAttribute('data-tip');card.style.display='block';
 const w=card.offsetWidth;card.style.left=(x>window.innerWidth/2?Math.max(4,x-w-12):x+12)+'px';
 card.style.top=(y+12)+'px';}
svg.addEventListener('mousemove',ev=>{if(pinned)return;const el=ev.target.closest('[data-tip]');
 if(el)show(el,ev.clientX,ev.clientY);else card.style.display='none';});
svg.addEventListener('click',ev=>{const el=ev.target.closest('[data-tip]');pinned=!!el;
 if(el)show(el,ev.clientX,ev.clientY);else card.style.display='none';});
let drag=null;
svg.addEventListener('wheel',ev=>{ev.preventDefault();const W=svg.clientWidth;
 const at=t0+(ev.offsetX-LEFT)/(W-LEFT-10)*(t1-t0),f=ev.deltaY>0?1.25:0.8;
 t0=at-(at-t0)*f;t1=at+(t1-at)*f;draw();},{passive:false});
svg.addEventListener('mousedown',ev=>{drag={x:ev.clientX,t0:t0,t1:t1};});
window.addEventListener('mouseup',()=>{drag=null;});
window.addEventListener('mousemove',ev=>{if(!drag)return;const W=svg.clientWidth;
 const dt=(ev.clientX-drag.x)/(W-LEFT-10)*(drag.t1-drag.t0);
 t0=drag.t0-dt;t1=drag.t1-dt;draw();});
document.getElementById('prev').onclick=()=>{if(page>0){page--;fit();draw();}};
document.getElementById('next').onclick=()=>{if(page<D.pages.length-1){page++;fit();draw();}};
document.getElementById('fit').onclick=()=>{fit();draw();};
fit();draw();
if(location.hash.indexOf('card=failure')>=0&&D.failure){
 page=Math.max(0,D.pages.findIndex(r=>D.failure[0]>=r[0]&&D.failure[0]<=r[1]));fit();draw();
 const line=document.getElementById('failureline');
 if(line){const b=line.getBoundingClientRect();pinned=true;show(line,b.left,b.top+40);}}
})();
"""


def _pages(data: RunData) -> list[tuple[int, int]]:
    """Time ranges of at most PAGE_EVENTS log items each, covering the run."""
    times = sorted([m[0] for m in data.messages] + [e[0] for e in data.events])
    if not times:
        return [(0, 1)]
    return [
        (times[k], times[min(k + PAGE_EVENTS, len(times)) - 1])
        for k in range(0, len(times), PAGE_EVENTS)
    ]


# The data goes into a <script> element, whose content HTML does not parse
# as markup until a "</script" — except that "<!--" followed by "<script"
# changes how that end tag is found. With every "<", ">" and "&" written as
# a JSON escape, no payload can end the element, open a comment in it or
# change the parse; U+2028/9 are escaped too (JSON allows them raw, older
# JavaScript does not). The escapes are inside JSON strings (the only place
# those characters occur), so JSON.parse reads the very text logged.
def _in_script(blob: str) -> str:
    """JSON made safe inside a <script> element: json.dumps escapes every
    non-ASCII character (U+2028 and U+2029 too), which leaves the three
    that could close the element or start an entity. str.replace, not
    str.translate: the page's JSON is megabytes for a long run."""
    return blob.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _swatch(shape: str) -> str:
    return f"<svg width=22 height=12>{shape}</svg>"


# What each mark means, drawn as the page draws it.
_LEGEND = "".join(
    _swatch(shape) + label
    for shape, label in (
        ("<line x1=1 y1=6 x2=21 y2=6 stroke='#36c' stroke-width=1.5/>", "message delivered"),
        ("<line x1=1 y1=6 x2=21 y2=6 stroke='#d33' stroke-dasharray='3 2'/>", "dropped"),
        ("<line x1=1 y1=6 x2=21 y2=6 stroke='#c6c'/>", "duplicated"),
        ("<circle cx=11 cy=6 r=4 fill='#2a2'/>", "node event"),
        ("<rect x=7 y=1 width=8 height=10 fill='#d33'/>", "crash"),
        ("<rect x=7 y=1 width=8 height=10 fill='#393'/>", "restart"),
        ("<rect x=7 y=1 width=8 height=10 fill='#e90'/>", "fault"),
        ("<rect x=0 y=0 width=22 height=12 fill='#06c' opacity='.15'/>", "partitioned"),
        ("<rect x=0 y=0 width=22 height=12 fill='#d33' opacity='.2'/>", "down"),
        (
            "<rect x=0 y=1 width=22 height=10 fill='hsl(200,65%,78%)'/>",
            "node state (a colour a value)",
        ),
        ("<line x1=11 y1=0 x2=11 y2=12 stroke='#d00' stroke-width=2/>", "the failure"),
    )
)


def html_page(data: RunData) -> str:
    """The timeline as one HTML document: data, script and style inline."""
    pages = _pages(data)
    notes = []
    if len(pages) > 1:
        notes.append(
            f"{len(data.messages) + len(data.events)} events: shown in {len(pages)} pages "
            f"of {PAGE_EVENTS} by time (Prev / Next)"
        )
    if not data.complete:
        notes.append("the run outgrew the log: its oldest events are missing")
    payload = {
        "nodes": data.nodes,
        "messages": data.messages,
        "events": data.events,
        "failure": data.failure,
        "pages": pages,
        "states": data.states,
    }
    blob = _in_script(json.dumps(payload, separators=(",", ":")))
    title = html.escape(data.title)
    return (
        "<!DOCTYPE html>\n<html><head><meta charset='utf-8'>"
        f"<title>askew timeline: {title}</title><style>{_STYLE}</style></head><body>"
        f"<header><b>{title}</b> &nbsp; <button id=prev>Prev</button>"
        "<button id=next>Next</button><button id=fit>Fit</button> <span id=pageinfo></span>"
        " &nbsp; <select id=faults><option value=''>jump to a fault...</option></select>"
        " &nbsp; wheel: zoom, drag: pan, hover: details, click: pin them"
        f" <span id=note>{html.escape('; '.join(notes))}"
        f"</span></header><div id=legend>{_LEGEND}</div><svg id=density></svg><div id=card></div>"
        f"<svg id=view data-nodes='{len(data.nodes)}' data-delivered='{data.delivered}'></svg>"
        "<pre id=summary></pre>"
        + (
            f"<pre id=compared>{html.escape(chr(10).join(data.compared).strip())}</pre>"
            if data.compared
            else ""
        )
        + f"<script type='application/json' id=data>{blob}</script>"
        f"<script>{_SCRIPT}</script></body></html>\n"
    )


# ---- Chrome trace-event JSON -----------------------------------------------------


def trace_events(data: RunData) -> dict[str, Any]:
    """The run in the Chrome trace-event format: a process per node (pid
    node + 1; pid 0 is the test body), log events as instant events,
    messages as flow events from a 1 us slice at the send to one at the
    delivery. Times in microseconds of virtual time."""
    out: list[dict[str, Any]] = []
    for pid, name in [(0, "test body")] + [(n + 1, f"node {n}") for n in data.nodes]:
        out.append(
            {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": name}}
        )
    for t_ns, lane, kind, text, site in data.events:
        out.append(
            {
                "ph": "i",
                "s": "p",
                "name": text[:60],
                "cat": kind,
                "pid": lane + 1,
                "tid": 0,
                "ts": t_ns / 1000,
                "args": {"text": text, "site": site},
            }
        )
    for k, (sent, arrived, src, dst, payload, outcome, by, at) in enumerate(data.messages):
        args: dict[str, Any] = {"src": src, "dst": dst, "payload": payload}
        args.update({"outcome": outcome, "sent by": by, "awaited at": at})
        name = f"{src}->{dst} {payload}"[:60]
        out.append(
            {
                "ph": "X",
                "name": name,
                "cat": "send",
                "pid": src + 1,
                "tid": 0,
                "ts": sent / 1000,
                "dur": 1,
                "args": args,
            }
        )
        if arrived is None:
            continue
        out.append(
            {
                "ph": "X",
                "name": name,
                "cat": "deliver",
                "pid": dst + 1,
                "tid": 0,
                "ts": arrived / 1000,
                "dur": 1,
                "args": args,
            }
        )
        out.append(
            {
                "ph": "s",
                "id": k,
                "name": "msg",
                "cat": "msg",
                "pid": src + 1,
                "tid": 0,
                "ts": sent / 1000,
            }
        )
        out.append(
            {
                "ph": "f",
                "bp": "e",
                "id": k,
                "name": "msg",
                "cat": "msg",
                "pid": dst + 1,
                "tid": 0,
                "ts": arrived / 1000,
            }
        )
    return {"traceEvents": out, "displayTimeUnit": "ms", "otherData": {"title": data.title}}


def write(
    loop: Any,
    title: str,
    timeline: str | None,
    trace_json: str | None,
    sites: dict[int, str] | None = None,
    states: list[Change] | None = None,
    compared: Sequence[str] = (),
) -> list[str]:
    """Write the run the loop's log holds to the files asked for; their
    paths. `compared`: the report's lines on the nearest passing seed."""
    data = collect(loop, title, sites, states)
    data.compared = list(compared)
    written = []
    makers: tuple[tuple[str | None, Callable[[], str]], ...] = (
        (timeline, lambda: html_page(data)),
        (trace_json, lambda: json.dumps(trace_events(data))),
    )
    for path, text in makers:
        if path is None:
            continue
        folder = os.path.dirname(path)
        if folder:
            os.makedirs(folder, exist_ok=True)
        # A test's name is the user's: a lone surrogate in it is written escaped.
        with open(path, "w", encoding="utf-8", errors="backslashreplace") as f:
            f.write(text())
        written.append(path)
    return written

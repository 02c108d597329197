// A live JSON tree: `update(document)` changes only the DOM of what changed, and flashes it.
//
// It leans on tether.js's copy-on-write patching: a subtree a patch did not touch is the very same
// object in the new document, so `old === new` skips it whole. Arrays are reconciled by their
// common prefix and suffix (a patch inserts, removes or replaces a few items; the rest keeps its
// DOM), and array indices are drawn by a CSS counter, so an insertion at the front does not
// rewrite a thousand labels. Collapsed containers have no DOM for their children at all.

const SHORT_INLINE = 72;      // a flat container shorter than this is drawn on one line
const MAX_AUTO_EXPAND = 2000; // bigger containers start collapsed
const MAX_STRING = 300;       // longer strings are cut on screen (the full text is in the tooltip)
const MAX_FLASHES = 24;       // flashes running at once
const FLASH_MS = 700;

function kindOf(value) {
  if (Array.isArray(value)) return "array";
  if (value !== null && typeof value === "object") return "object";
  return "primitive";
}

function childCount(value) {
  return Array.isArray(value) ? value.length : Object.keys(value).length;
}

/** True when a container holds only a few primitives that fit on one line. */
function isShortFlat(value) {
  const entries = Array.isArray(value) ? value.map((v) => ["", v]) : Object.entries(value);
  if (entries.length > 8) return false;
  let length = 2;
  for (const [key, child] of entries) {
    if (child !== null && typeof child === "object") return false;
    length += key.length + 4 + (typeof child === "string" ? child.length + 2 : String(child).length);
    if (length > SHORT_INLINE) return false;
  }
  return true;
}

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

export class LiveJsonTree {
  #container;
  #root = null;
  #nodes = new WeakMap();
  #flashColor;
  #flashes = new WeakMap();
  /** When the flashes of the last FLASH_MS started (oldest first). */
  #flashStarts = [];

  /** `autoExpandDepth`: containers above this depth start expanded. */
  constructor(container, { autoExpandDepth = 3 } = {}) {
    this.#container = container;
    this.autoExpandDepth = autoExpandDepth;
    this.#flashColor = getComputedStyle(document.documentElement).getPropertyValue("--flash").trim() || "#ffe58a";
    container.addEventListener("click", (event) => {
      const toggle = event.target.closest(".toggle");
      if (!toggle || !container.contains(toggle)) return;
      const node = this.#nodes.get(toggle.parentElement);
      if (node) this.#setExpanded(node, !node.expanded, false);
    });
  }

  /** Shows `value`; with `flash`, whatever differs from what was shown flashes. */
  update(value, { flash = true } = {}) {
    if (this.#root === null) {
      this.#root = this.#create("", value, 0, false);
      this.#root.element.classList.add("root");
      this.#container.replaceChildren(this.#root.element);
      return;
    }
    this.#root = this.#update(this.#root, value, flash);
    this.#root.element.classList.add("root");
  }

  clear() {
    this.#root = null;
    this.#container.replaceChildren();
  }

  expandAll() { if (this.#root) this.#setExpandedDeep(this.#root, true); }
  collapseAll() {
    if (!this.#root) return;
    if (this.#root.kind === "primitive") return;
    // The root stays open: collapsing it would hide everything behind one line.
    for (const child of this.#childNodes(this.#root)) this.#setExpandedDeep(child, false);
  }

  // MARK: Building

  #create(key, value, depth, isIndex) {
    const kind = kindOf(value);
    const node = { key, value, kind, depth, isIndex, element: null, children: null, expanded: false };
    const row = element("div", `node ${kind === "primitive" ? "leaf" : "container " + kind}`);
    node.element = row;
    if (depth > 0 && !isIndex) row.dataset.key = key;  // lets tests and user styles find a member
    this.#nodes.set(row, node);
    if (kind !== "primitive") {
      const toggle = element("button", "toggle");
      toggle.type = "button";
      row.append(toggle);
    }
    if (depth > 0) {
      const label = element("span", isIndex ? "key index" : "key", isIndex ? "" : key);
      row.append(label);
    }
    if (kind === "primitive") {
      node.valueElement = element("span", "value");
      row.append(node.valueElement);
      this.#showPrimitive(node);
      return node;
    }
    row.append(element("span", "bracket", kind === "array" ? "[" : "{"));
    node.summaryElement = element("span", "summary");
    node.childrenElement = element("div", "children");
    row.append(node.summaryElement, node.childrenElement, element("span", "bracket close", kind === "array" ? "]" : "}"));
    this.#showContainer(node);
    const inline = isShortFlat(value);
    const open = inline || (depth < this.autoExpandDepth && childCount(value) <= MAX_AUTO_EXPAND);
    this.#setExpanded(node, open, false);
    return node;
  }

  #showPrimitive(node) {
    const { value, valueElement } = node;
    const type = value === null ? "null" : typeof value;
    valueElement.className = `value ${type}`;
    let text = type === "string" ? JSON.stringify(value) : String(value);
    if (text.length > MAX_STRING) {
      valueElement.title = text.slice(0, 4000);
      text = text.slice(0, MAX_STRING) + "…";
    } else if (valueElement.title) {
      valueElement.removeAttribute("title");
    }
    valueElement.textContent = text;
  }

  #showContainer(node) {
    const count = childCount(node.value);
    const noun = node.kind === "array" ? (count === 1 ? "item" : "items") : (count === 1 ? "key" : "keys");
    node.summaryElement.textContent = count === 0 ? "" : `${count} ${noun}`;
    node.element.classList.toggle("empty", count === 0);
    node.element.classList.toggle("inline", isShortFlat(node.value));
  }

  #setExpanded(node, expanded, flash) {
    if (node.kind === "primitive") return;
    node.expanded = expanded;
    node.element.classList.toggle("collapsed", !expanded);
    node.element.firstChild.setAttribute("aria-expanded", String(expanded));
    node.element.firstChild.setAttribute("aria-label", expanded ? "collapse" : "expand");
    if (expanded && node.children === null) this.#buildChildren(node, flash);
    if (!expanded && node.children !== null) {
      // Hidden children are dropped, not kept up to date.
      node.children = null;
      node.childrenElement.replaceChildren();
    }
  }

  #setExpandedDeep(node, expanded) {
    if (node.kind === "primitive") return;
    if (expanded && childCount(node.value) > MAX_AUTO_EXPAND * 5) return;
    this.#setExpanded(node, expanded || node.element.classList.contains("inline"), false);
    if (node.children) for (const child of this.#childNodes(node)) this.#setExpandedDeep(child, expanded);
  }

  #childNodes(node) {
    if (node.children === null) return [];
    return node.kind === "array" ? node.children : [...node.children.values()];
  }

  #buildChildren(node, flash) {
    const fragment = document.createDocumentFragment();
    if (node.kind === "array") {
      node.children = node.value.map((child, index) => this.#create(String(index), child, node.depth + 1, true));
      for (const child of node.children) fragment.append(child.element);
    } else {
      node.children = new Map();
      for (const [key, child] of Object.entries(node.value)) {
        const childNode = this.#create(key, child, node.depth + 1, false);
        node.children.set(key, childNode);
        fragment.append(childNode.element);
      }
    }
    node.childrenElement.replaceChildren(fragment);
    if (flash) this.#flash(node.childrenElement);
  }

  // MARK: Updating

  /** Brings `node` to `value`; returns the node now standing for it (a new one if the type changed). */
  #update(node, value, flash) {
    if (node.value === value) return node;  // untouched subtree (or an equal primitive)
    if (kindOf(value) !== node.kind) {
      const replacement = this.#create(node.key, value, node.depth, node.isIndex);
      node.element.replaceWith(replacement.element);
      if (flash) this.#flash(replacement.element);
      return replacement;
    }
    const previous = node.value;
    node.value = value;
    if (node.kind === "primitive") {
      this.#showPrimitive(node);
      if (flash) this.#flash(node.valueElement);
      return node;
    }
    this.#showContainer(node);
    if (node.element.classList.contains("inline") && !node.expanded) this.#setExpanded(node, true, false);
    if (node.children === null) {
      if (flash) this.#flash(node.summaryElement);
      return node;
    }
    if (node.kind === "array") this.#updateArray(node, value, flash);
    else this.#updateObject(node, previous, value, flash);
    return node;
  }

  #updateArray(node, array, flash) {
    const children = node.children;
    const oldLength = children.length;
    const newLength = array.length;
    let start = 0;
    while (start < oldLength && start < newLength && children[start].value === array[start]) start++;
    let oldEnd = oldLength;
    let newEnd = newLength;
    while (oldEnd > start && newEnd > start && children[oldEnd - 1].value === array[newEnd - 1]) { oldEnd--; newEnd--; }
    const paired = Math.min(oldEnd - start, newEnd - start);
    for (let i = start; i < start + paired; i++) children[i] = this.#update(children[i], array[i], flash);
    if (oldEnd - start > paired) {
      for (let i = start + paired; i < oldEnd; i++) children[i].element.remove();
      children.splice(start + paired, oldEnd - start - paired);
    } else if (newEnd - start > paired) {
      const reference = children[start + paired]?.element ?? null;
      const added = [];
      const fragment = document.createDocumentFragment();
      for (let i = start + paired; i < newEnd; i++) {
        const child = this.#create(String(i), array[i], node.depth + 1, true);
        added.push(child);
        fragment.append(child.element);
      }
      node.childrenElement.insertBefore(fragment, reference);
      children.splice(start + paired, 0, ...added);
      if (flash) for (const child of added) this.#flash(child.element);
    }
  }

  #updateObject(node, previous, object, flash) {
    const children = node.children;
    for (const [key, child] of children) {
      if (!Object.hasOwn(object, key)) {
        child.element.remove();
        children.delete(key);
      }
    }
    let before = null;
    for (const key of Object.keys(object)) {
      let child = children.get(key);
      if (child) {
        const updated = this.#update(child, object[key], flash);
        if (updated !== child) children.set(key, updated);
        child = updated;
      } else {
        child = this.#create(key, object[key], node.depth + 1, false);
        children.set(key, child);
        if (before) before.after(child.element);
        else node.childrenElement.prepend(child.element);
        if (flash) this.#flash(child.element);
      }
      before = child.element;
    }
  }

  #flash(target) {
    // The Web Animations API restarts cleanly on every change and needs no inline style. Every
    // running flash is a repaint on each frame, so they are short and at most MAX_FLASHES run at
    // once: under a flood of patches some changes don't flash, and the page stays smooth.
    const now = performance.now();
    while (this.#flashStarts.length > 0 && now - this.#flashStarts[0] > FLASH_MS) this.#flashStarts.shift();
    if (this.#flashStarts.length >= MAX_FLASHES) return;
    this.#flashStarts.push(now);
    this.#flashes.get(target)?.cancel();
    this.#flashes.set(target, target.animate([{ backgroundColor: this.#flashColor }, { backgroundColor: "transparent" }], { duration: FLASH_MS, easing: "ease-out" }));
  }
}

// A form per action, built from the room's action description (the server's `describe` answer):
// one field per argument, typed by its JSON type, optional ones marked and left out when empty.
// Each form shows the server's answer: the ack's version, or the error in plain words.

import { explainError } from "./format.js";

const placeholders = {
  string: "text",
  integer: "whole number",
  number: "number",
  array: 'JSON array, e.g. [1, 2]',
  object: 'JSON object, e.g. {"a": 1}',
  any: 'any JSON: "text", 42, true, {…}',
};

const needs = { integer: "a whole number", number: "a number", array: "a JSON array", object: "a JSON object", any: "a JSON value" };

/** A value the user typed, converted to the field's JSON type; throws an Error in plain words. */
export function readField(type, raw, optional) {
  if (type === "boolean") {
    if (raw === "") return undefined;
    return raw === "true";
  }
  if (raw === "" && (optional || type !== "string")) {
    if (optional) return undefined;
    throw new Error(`needs ${needs[type] ?? "a value"}`);
  }
  switch (type) {
    case "string": return raw;
    case "integer": {
      const value = Number(raw);
      if (!Number.isInteger(value)) throw new Error("needs a whole number");
      return value;
    }
    case "number": {
      const value = Number(raw);
      if (!Number.isFinite(value)) throw new Error("needs a number");
      return value;
    }
    default: {
      let value;
      try {
        value = JSON.parse(raw);
      } catch {
        throw new Error("is not valid JSON");
      }
      if (type === "array" && !Array.isArray(value)) throw new Error("needs a JSON array");
      if (type === "object" && (value === null || typeof value !== "object" || Array.isArray(value))) throw new Error("needs a JSON object");
      return value;
    }
  }
}

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

let formCounter = 0;

export class ActionForms {
  #container;
  #send;
  #suggest;
  /** Why nothing may be sent any more (the room is gone), or null. */
  #disabledBecause = null;

  /**
   * `send(action, args)` returns the client's promise (ack or TetherError); `suggest(fieldName)`
   * returns [{value, label}] found in the room's state for a string field of that name.
   */
  constructor(container, { send, suggest }) {
    this.#container = container;
    this.#send = send;
    this.#suggest = suggest;
  }

  /** Builds the forms for `actions` ([{name, args}]) or, when null, only the free-form one. */
  show(actions, { note } = {}) {
    const content = [];
    if (note) content.push(element("p", "muted", note));
    if (actions && actions.length === 0) content.push(element("p", "muted", "This room takes no actions: it changes on its own (or is read-only)."));
    for (const action of actions ?? []) content.push(this.#actionForm(action));
    content.push(this.#freeForm(actions === null));
    this.#container.replaceChildren(...content);
    if (this.#disabledBecause !== null) this.disable(this.#disabledBecause);
  }

  clear() {
    this.#disabledBecause = null;
    this.#container.replaceChildren();
  }

  /** Every form off, with `reason` above them; until `clear()`. */
  disable(reason) {
    this.#disabledBecause = reason;
    for (const control of this.#container.querySelectorAll("button, input, textarea, select")) control.disabled = true;
    if (!this.#container.querySelector(".forms-disabled")) this.#container.prepend(element("p", "forms-disabled", reason));
  }

  #actionForm(action) {
    const form = element("form", "action-form");
    form.dataset.action = action.name;
    form.noValidate = true;
    const button = element("button", "primary action-button", action.name);
    button.type = "submit";
    const fields = element("div", "action-fields");
    const readers = [];
    for (const [name, spec] of Object.entries(action.args ?? {})) {
      const { control, read } = this.#field(action.name, name, spec);
      fields.append(control);
      readers.push({ name, read });
    }
    const result = element("output", "action-result");
    form.append(button, fields, result);
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const args = {};
      try {
        for (const { name, read } of readers) {
          const value = read();
          if (value !== undefined) args[name] = value;
        }
      } catch (error) {
        this.#showResult(result, "error", error.message);
        return;
      }
      this.#perform(action.name, readers.length > 0 ? args : undefined, result, button);
    });
    return form;
  }

  #field(actionName, name, spec) {
    const type = spec?.type ?? "any";
    const optional = spec?.optional === true;
    const id = `action-${++formCounter}`;
    const label = element("label", "field");
    label.htmlFor = id;
    const caption = element("span", "field-name", name);
    const hint = element("span", "field-type", optional ? `${type}, optional` : type);
    let input;
    if (type === "boolean") {
      input = element("select");
      const options = optional ? [["", "(not set)"], ["true", "true"], ["false", "false"]] : [["false", "false"], ["true", "true"]];
      for (const [value, text] of options) {
        const option = element("option", undefined, text);
        option.value = value;
        input.append(option);
      }
    } else if (type === "array" || type === "object" || type === "any") {
      input = element("textarea");
      input.rows = 1;
      input.spellcheck = false;
    } else {
      input = element("input");
      input.type = type === "integer" || type === "number" ? "number" : "text";
      if (type === "integer") input.step = "1";
      if (type === "number") input.step = "any";
      input.spellcheck = false;
      input.autocomplete = "off";
    }
    input.id = id;
    input.name = name;
    if (input.tagName !== "SELECT") input.placeholder = placeholders[type] ?? "";
    if (optional) label.classList.add("optional");
    if (type === "string") {
      // Values of same-named members in the room's state (every item "id", say), offered as
      // suggestions when the field gets the focus.
      const list = element("datalist");
      list.id = `${id}-suggestions`;
      input.setAttribute("list", list.id);
      input.addEventListener("focus", () => {
        const options = this.#suggest(name).map(({ value, label: text }) => {
          const option = element("option");
          option.value = value;
          if (text) option.label = text;
          return option;
        });
        list.replaceChildren(...options);
      });
      label.append(caption, hint, input, list);
    } else {
      label.append(caption, hint, input);
    }
    return { control: label, read: () => {
      try {
        return readField(type, input.value, optional);
      } catch (error) {
        input.focus();
        throw new Error(`${name} ${error.message}`);
      }
    } };
  }

  /** Any action by name with JSON args: for kinds the server did not describe, and for trying errors. */
  #freeForm(open) {
    const details = element("details", "free-form");
    details.open = open;
    details.append(element("summary", undefined, "Another action, by name"));
    const form = element("form", "action-form");
    form.noValidate = true;
    const name = element("input");
    name.placeholder = "action name";
    name.setAttribute("aria-label", "action name");
    name.spellcheck = false;
    const args = element("textarea");
    args.rows = 1;
    args.placeholder = 'arguments as a JSON object, e.g. {"by": 2} (optional)';
    args.setAttribute("aria-label", "arguments as JSON");
    args.spellcheck = false;
    const button = element("button", "primary", "Send");
    button.type = "submit";
    const result = element("output", "action-result");
    form.append(name, args, button, result);
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      if (!name.value.trim()) return this.#showResult(result, "error", "Type the action's name.");
      let parsed;
      try {
        parsed = readField("object", args.value.trim(), true);
      } catch (error) {
        return this.#showResult(result, "error", `The arguments ${error.message}.`);
      }
      this.#perform(name.value.trim(), parsed, result, button);
    });
    details.append(form);
    return details;
  }

  async #perform(action, args, result, button) {
    button.disabled = true;
    this.#showResult(result, "pending", "sending…");
    const started = performance.now();
    try {
      const ack = await this.#send(action, args);
      const ms = Math.round(performance.now() - started);
      // Text fields start empty again (the next "add" needs a new title); numbers and choices stay.
      for (const input of result.form?.querySelectorAll("input[type=text]") ?? []) input.value = "";
      this.#showResult(result, "ok", `✓ done: the room is at version ${ack.version} (${ms} ms)`);
    } catch (error) {
      const { code, headline, outcome, detail } = explainError(error);
      this.#showResult(result, "error", `✗ ${headline}${outcome ? ` ${outcome}` : ""}${detail ? ` Server says: ${detail}` : ""} [${code}]`);
    } finally {
      button.disabled = this.#disabledBecause !== null;
    }
  }

  #showResult(result, kind, text) {
    result.dataset.kind = kind;
    result.textContent = text;
  }
}

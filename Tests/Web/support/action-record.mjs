// What tetherd keeps of one client's numbered actions in a room, for the tests' fake servers: the
// rule of Sources/TetherServer/Rooms/ActionOutcomes.swift (docs/PROTOCOL.md, "What is
// remembered"), kept exactly. The outcomes of the client's highest 64 numbers, in the order
// recorded; past 64, the lowest number goes (not the first recorded), and `forgottenUpTo` becomes
// the highest number let go of. A number with an outcome is a repeat; one without, above
// `forgottenUpTo`, never ran and runs; one at or below it may have run, and gets stale_action.

/** Outcomes remembered per client (ActionOutcomes.perClient). */
export const REMEMBERED = 64;

export class ActionRecord {
  /** [seq, outcome], in the order recorded. */
  numbers = [];
  /** The highest number let go of. */
  forgottenUpTo = 0;

  /** ActionOutcomes.lookup: `{ kind: "repeated", outcome }` for a number with an outcome, else
   * `{ kind: "new" }` (run it) or `{ kind: "forgotten" }` (stale_action). */
  lookup(seq) {
    const found = this.numbers.findLast(([recorded]) => recorded === seq);
    if (found) return { kind: "repeated", outcome: found[1] };
    return { kind: seq > this.forgottenUpTo ? "new" : "forgotten" };
  }

  /** Records the outcome of a number `lookup` called new; past 64, lets go of the lowest. */
  record(seq, outcome) {
    this.numbers.push([seq, outcome]);
    if (this.numbers.length <= REMEMBERED) return;
    let lowest = 0;
    for (let i = 1; i < this.numbers.length; i++) if (this.numbers[i][0] < this.numbers[lowest][0]) lowest = i;
    const [[dropped]] = this.numbers.splice(lowest, 1);
    this.forgottenUpTo = Math.max(this.forgottenUpTo, dropped);
  }
}

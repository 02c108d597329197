import Foundation
import TetherBinding
import TetherClient
import TetherDemoContracts
import TetherTUI

/// `exchange` (shared): the result follows the amount as it is typed, with no button; the pair
/// of currencies is named everywhere and chosen with the "from" and "to" buttons; an amount the
/// server cannot read is explained rather than left blank.
///
/// Works with both shapes of the room: the current one (`from`, `to`, `currencies`, `error`,
/// `setPair`) and the older `{amount, rate, result}`, for which it names no currency, offers no
/// switching, and explains an unreadable amount itself.
@MainActor
final class ExchangeScreen: Screen {
    let body: Widget
    private let context: ScreenContext
    private let exchange: ContractRoom<ExchangeContract>
    private let fromRow = Stack.row([], spacing: 1)
    private let toRow = Stack.row([], spacing: 1)
    /// The room's pair now: a button acts on it when pressed, not on the pair it was drawn with
    /// (a row is redrawn only when its own marks move).
    private var pair: (from: String?, to: String?) = (nil, nil)

    init(_ context: ScreenContext) {
        self.context = context
        let exchange = context.room(ExchangeContract.self)
        self.exchange = exchange
        let amount = TextField(placeholder: "amount, e.g. 1000")
        let amountBox = Box(title: "Amount", amount)
        let result = Label("")
        let rateLabel = Label("", style: Style(dim: true))
        let rate = TextField(placeholder: "new rate, then Enter")
        let rateBox = Box(title: "Set the rate", rate)
        // Too narrow for the buttons: one line says which pair is set and how to see them.
        let narrow = Label("", style: Style(dim: true), wraps: true)
        let currencies = Fallback(Stack(.vertical, [fromRow, toRow]), otherwise: narrow)
        body = Stack(.vertical, [amountBox, result, rateLabel, currencies, rateBox])

        context.bindTwoWay(amount, to: Field.amount, sending: exchange.setAmount) { .init(value: $0) }
        let pair = combineLatest(context.value(Field.from), context.value(Field.to))
        let outcome = combineLatest(
            context.value(Field.amount, default: ""), context.value(Field.result, default: ""), context.value(Field.error))
        context.bind(combineLatest(pair, outcome, context.value(Field.rate))) { pair, outcome, rateValue in
            let (from, to) = pair
            let (typed, converted, error) = outcome
            amountBox.title = from.map { "Amount in \($0)" + (to.map { " → \($0)" } ?? "") } ?? "Amount"
            rateBox.title = from.flatMap { from in to.map { "Set the rate: \($0) per 1 \(from)" } } ?? "Set the rate"
            rateLabel.text = "rate: " + (rateValue.map { value in
                from.flatMap { from in to.map { "1 \(from) = \(Self.number(value)) \($0)" } } ?? Self.number(value)
            } ?? "-")
            let text = Self.resultLine(amount: typed, result: converted, error: error, from: from, to: to)
            result.text = text.line
            result.style = text.isProblem ? Style(fg: .red, bold: true) : (typed.isEmpty ? Style(dim: true) : Style(bold: true))
        }
        context.bind(combineLatest(context.value(Field.currencies, default: []), pair)) { [unowned self] list, pair in
            self.pair = pair
            fill(fromRow, label: "from", currencies: list, selected: pair.0) { [unowned self] chosen in
                chosen == self.pair.to ? (chosen, self.pair.from) : (chosen, self.pair.to)
            }
            fill(toRow, label: "to  ", currencies: list, selected: pair.1) { [unowned self] chosen in
                chosen == self.pair.from ? (self.pair.to, chosen) : (self.pair.from, chosen)
            }
            currencies.isHidden = list.isEmpty
            narrow.text = "\(pair.0 ?? "?") → \(pair.1 ?? "?"): a wider terminal shows the buttons to switch currencies"
            context.hints.value = list.isEmpty
                ? ["type an amount", "Enter in the rate field sets the rate"]
                : ["type an amount", "Tab to a currency, Enter picks it", "Enter in the rate field sets the rate"]
        }
        rate.onSubmit { [unowned context, unowned rate] text in
            guard let value = Double(text.trimmingCharacters(in: .whitespaces)), value.isFinite, value > 0 else {
                context.onProblem("the rate must be a positive number, like 1350 or 0.74")
                return
            }
            rate.text = ""
            if await context.send(exchange.setRate, .init(value: value)) == nil, rate.text.isEmpty { rate.text = text }
        }
    }

    /// One row of currency buttons; pressing one sends `setPair` with the pair `pairFor` gives
    /// from the pair at that moment (picking the other side's currency swaps the two).
    private func fill(_ row: Stack, label: String, currencies: [String], selected: String?,
                      pairFor: @escaping (String) -> (String?, String?)) {
        let titles = currencies.map { $0 == selected ? "\($0) ✓" : $0 }
        let current = row.children.compactMap { ($0 as? Button)?.title }
        guard titles != current else { return }
        row.removeAll()
        row.add(Label(label, style: Style(dim: true)))
        for (currency, title) in zip(currencies, titles) {
            row.add(Button(title).onPress { [unowned self] in
                let (from, to) = pairFor(currency)
                guard let from, let to else { return }
                await context.send(exchange.setPair, .init(from: from, to: to))
            })
        }
    }

    private typealias Field = ExchangeContract.Fields

    /// "1350.0" stays, "1350.123456" too; no exponent for ordinary rates.
    static func number(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(format: "%.1f", value) : "\(value)"
    }

    /// The line under the amount: the conversion, the server's reason the amount can't be read,
    /// or (older server, which gives none) the screen's own.
    static func resultLine(amount: String, result: String, error: String?, from: String?, to: String?) -> (line: String, isProblem: Bool) {
        let typed = amount.trimmingCharacters(in: .whitespaces)
        if let error, !error.isEmpty { return ("✗ " + error, true) }
        if typed.isEmpty { return ("type an amount to convert", false) }
        if !result.isEmpty {
            return ("\(typed)\(from.map { " \($0)" } ?? "") = \(result)\(to.map { " \($0)" } ?? "")", false)
        }
        return ("✗ " + whyUnreadable(typed), true)
    }

    /// Why the server gave no result for `amount` (for servers that don't say).
    static func whyUnreadable(_ amount: String) -> String {
        if amount.contains(","), Double(amount.replacingOccurrences(of: ",", with: "")) != nil {
            return "\"\(amount)\" is not a number: write \(amount.replacingOccurrences(of: ",", with: "")) (no thousands separators)"
        }
        if let value = Double(amount), value.isFinite {
            if amount.lowercased().contains("e") { return "\"\(amount)\": write the number without an exponent" }
            return "\"\(amount)\" gives a result too large to show"
        }
        return "\"\(amount)\" is not a number"
    }
}

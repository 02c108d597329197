import Foundation
import TetherTUI

/// `exchange` (shared): the result follows the amount as it is typed, with no button.
@MainActor
final class ExchangeScreen: Screen {
    let body: Widget
    let hints = "type an amount; Enter in the rate field sets the rate"

    init(_ context: ScreenContext) {
        let amount = TextField(placeholder: "amount")
        let result = Label("")
        let rateLabel = Label("")
        let rate = TextField(placeholder: "new rate, then Enter")

        context.bindTwoWay(amount, to: "/amount", action: "setAmount")
        context.bind("/result", as: String.self, default: "") { text in
            result.text = "result: " + (text.isEmpty ? "-" : text)
        }
        context.bind(context.value("/rate", as: Double.self)) { value in
            rateLabel.text = "rate:   " + (value.map { "\($0)" } ?? "-")
        }
        rate.onSubmit { [unowned context, unowned rate] text in
            guard let value = Double(text.trimmingCharacters(in: .whitespaces)) else {
                context.onActionResult(InputError("the rate must be a number"))
                return
            }
            rate.text = ""
            if await !context.send("setRate", ["value": .double(value)]), rate.text.isEmpty { rate.text = text }
        }
        body = Stack(.vertical, [
            Box(title: "Amount", amount), result, rateLabel, Label(), Box(title: "Set the rate", rate),
        ])
    }
}

/// A mistake in what the user typed, shown in the status bar.
struct InputError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

import Foundation
import TetherBinding
import TetherContract
import TetherDemoContracts
import TetherState

/// `ExchangeContract`'s ViewModel: `result` follows the typed `amount` at once, with no button.
/// The pair (`from` → `to`) can be switched among `currencies`; when the amount can't be read,
/// `error` says why and `result` is empty.
public final class Exchange: ViewModel, ExchangeContract.Implementation {
    /// Units of each currency per US dollar (fixed demo rates).
    static let perDollar: [String: Double] = ["USD": 1, "KRW": 1350, "EUR": 0.92, "JPY": 150, "GBP": 0.79]
    static let initial = ExchangeContract.State()

    public let amount = Observable(initial.amount)
    public let from = Observable(initial.from)
    public let to = Observable(initial.to)
    public let rate = Observable(initial.rate)
    public let currencies = ReadOnlyObservable.constant(initial.currencies)
    public let result: ReadOnlyObservable<String>
    public let error: ReadOnlyObservable<String?>

    public init(context: ViewModelContext) {
        let conversion = combineLatest(amount, rate).map(Exchange.convert)
        result = conversion.map { (try? $0.get()) ?? "" }.removeDuplicates()
        error = conversion.map { result -> String? in
            if case .failure(let problem) = result { return problem.message } else { return nil }
        }.removeDuplicates()
    }

    struct Unreadable: Error, Equatable {
        let message: String
    }

    /// amount × rate with two decimals; an empty amount gives "" and no error.
    static func convert(_ amount: String, _ rate: Double) -> Result<String, Unreadable> {
        let text = amount.trimmingCharacters(in: .whitespaces)
        guard !text.isEmpty else { return .success("") }
        if text.contains(",") {
            return .failure(Unreadable(message: "\"\(text)\" has a comma: write \(text.replacingOccurrences(of: ",", with: "")) without separators"))
        }
        // The rule is the message's: digits and at most one decimal point, so no sign either.
        if text.hasPrefix("-"), Double(text.dropFirst()) != nil {
            return .failure(Unreadable(message: "\"\(text)\" is negative: type an amount without a sign"))
        }
        guard text.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }), let value = Double(text) else {
            return .failure(Unreadable(message: "\"\(text)\" is not a number: use digits and at most one decimal point"))
        }
        let result = value * rate
        guard value.isFinite, result.isFinite, abs(result) < 1e15 else {
            return .failure(Unreadable(message: "\"\(text)\" is too large to convert"))
        }
        return .success(String(format: "%.2f", result))
    }

    public static let actions = ActionTable(ExchangeContract.binding(Exchange.self))

    public func setAmount(value: String) throws {
        guard value.utf8.count <= 64 else { throw ExchangeContract.Failure.amountTooLong }
        amount.value = value
    }

    public func setRate(value: Double) throws {
        guard value.isFinite, value > 0 else { throw ExchangeContract.Failure.badRate }
        rate.value = value
    }

    public func setPair(from: String, to: String) throws {
        guard let fromRate = Self.perDollar[from], let toRate = Self.perDollar[to] else {
            throw ExchangeContract.Failure.unknownCurrency
        }
        // A currency against itself would show "10 EUR = 20.00 EUR" after a setRate.
        guard from != to else {
            throw Refusal(ExchangeContract.Failure.samePair, "from and to must be two different currencies (both are \(from))")
        }
        self.from.value = from
        self.to.value = to
        rate.value = (toRate / fromRate * 10_000).rounded() / 10_000
    }
}

/// Two widgets: the second beside the first (on the right) where the area is at least
/// `besideFrom` cells wide, else below it while the first keeps `minimumHeight` rows; with fewer
/// rows the second gives way (drawn nowhere, so Tab skips it). The second is `secondWidth` wide
/// beside (at most 45% of the area) and `secondHeight` tall below.
public final class Beside: Widget {
    public let first: Widget
    public let second: Widget
    @Redraws public var besideFrom: Int
    @Redraws public var minimumHeight: Int
    @Redraws public var secondWidth: Int
    @Redraws public var secondHeight: Int

    public init(_ first: Widget, _ second: Widget, besideFrom: Int, minimumHeight: Int, secondWidth: Int, secondHeight: Int) {
        self.first = first
        self.second = second
        self.besideFrom = besideFrom
        self.minimumHeight = minimumHeight
        self.secondWidth = secondWidth
        self.secondHeight = secondHeight
        super.init()
        adopt(first)
        adopt(second)
    }

    public override var children: [Widget] { [first, second] }

    public override func render(in area: Rect, into buffer: inout Buffer) {
        if area.width >= besideFrom {
            let width = min(secondWidth, area.width * 9 / 20)
            first.draw(in: Rect(x: area.x, y: area.y, width: area.width - width, height: area.height), into: &buffer)
            second.draw(in: Rect(x: area.x + area.width - width, y: area.y, width: width, height: area.height), into: &buffer)
        } else {
            let below = area.height - secondHeight >= minimumHeight ? secondHeight : 0
            first.draw(in: Rect(x: area.x, y: area.y, width: area.width, height: area.height - below), into: &buffer)
            second.draw(in: Rect(x: area.x, y: area.y + area.height - below, width: below == 0 ? 0 : area.width, height: below), into: &buffer)
        }
    }
}

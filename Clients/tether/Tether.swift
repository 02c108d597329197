@main
struct Tether {
    static func main() {}
}

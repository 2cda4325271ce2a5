// Sets the linker flags a Node addon needs (N-API symbols resolve from the node binary at
// load time).
fn main() {
    napi_build::setup();
}

//! `mock-mcp`: the test MCP server. With no arguments (or `--stdio`) it serves over stdio; with
//! `--http 127.0.0.1:PORT` over streamable HTTP (printing `listening on http://…/mcp`) until
//! killed.

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [] => stdio().await,
        [flag] if flag == "--stdio" => stdio().await,
        [flag, addr] if flag == "--http" => http(addr).await,
        _ => {
            eprintln!("usage: mock-mcp [--stdio | --http 127.0.0.1:PORT]");
            std::process::exit(2);
        }
    }
}

async fn stdio() {
    if let Err(e) = engram_mcp::mock::serve_stdio().await {
        eprintln!("mock-mcp: {e}");
        std::process::exit(1);
    }
}

async fn http(addr: &str) {
    let addr = match addr.parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("mock-mcp: bad address {addr}: {e}");
            std::process::exit(2);
        }
    };
    let server = match engram_mcp::mock::serve_http(addr).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("mock-mcp: {e}");
            std::process::exit(1);
        }
    };
    println!("listening on {}", server.url());
    let _ = tokio::signal::ctrl_c().await;
}

import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.InetAddress;
import java.net.URI;
import java.net.UnknownHostException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;

/**
 * Fetches URLs in the ways the replay tests check, one argument each, in order:
 * `url=URL` (HttpURLConnection GET), `post=URL=BODY` (HttpURLConnection POST),
 * `channel=URL` (SocketChannel, blocking), `selector=URL` (non-blocking, one Selector),
 * `send=URL` (HttpClient.send), `async=URL` (HttpClient.sendAsync), `dns=HOST` (InetAddress),
 * `self=BODY` (a server in the program and a client of it), `loop=N=URL` (N HttpURLConnection GETs, for the benchmark). Prints what it got.
 */
public class NetFetch {
    public static void main(String[] args) throws Exception {
        HttpClient client = null;
        for (String a : args) {
            String[] p = a.split("=", 3);
            switch (p[0]) {
                case "url" -> {
                    try {
                        HttpURLConnection c = (HttpURLConnection) URI.create(p[1]).toURL().openConnection();
                        int code = c.getResponseCode();
                        String body = new String(c.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                        System.out.println("url " + code + " [" + body + "]");
                    } catch (java.io.IOException e) {
                        System.out.println("url failed: " + e);
                    }
                }
                case "channel", "selector" -> {
                    // A raw HTTP/1.0 GET over a SocketChannel: blocking, or non-blocking with a
                    // Selector driving connect, write and read on this thread.
                    URI u = URI.create(p[1]);
                    java.net.InetSocketAddress to = new java.net.InetSocketAddress(u.getHost(), u.getPort());
                    java.nio.ByteBuffer req = java.nio.ByteBuffer.wrap(("GET " + u.getPath()
                        + " HTTP/1.0\r\nHost: x\r\n\r\n").getBytes(StandardCharsets.UTF_8));
                    java.io.ByteArrayOutputStream got = new java.io.ByteArrayOutputStream();
                    java.nio.ByteBuffer buf = java.nio.ByteBuffer.allocate(4096);
                    try (java.nio.channels.SocketChannel ch = java.nio.channels.SocketChannel.open()) {
                        if (p[0].equals("channel")) {
                            ch.connect(to);
                            while (req.hasRemaining()) {
                                ch.write(req);
                            }
                            while (ch.read(buf.clear()) >= 0) {
                                got.write(buf.array(), 0, buf.position());
                            }
                        } else {
                            ch.configureBlocking(false);
                            java.nio.channels.Selector sel = java.nio.channels.Selector.open();
                            ch.connect(to);
                            java.nio.channels.SelectionKey k = ch.register(sel,
                                java.nio.channels.SelectionKey.OP_CONNECT);
                            boolean done = false;
                            while (!done) {
                                sel.select(5000);
                                sel.selectedKeys().clear();
                                if (k.isConnectable() && ch.finishConnect()) {
                                    k.interestOps(java.nio.channels.SelectionKey.OP_WRITE);
                                } else if (k.isWritable()) {
                                    ch.write(req);
                                    if (!req.hasRemaining()) {
                                        k.interestOps(java.nio.channels.SelectionKey.OP_READ);
                                    }
                                } else if (k.isReadable()) {
                                    int n = ch.read(buf.clear());
                                    if (n < 0) {
                                        done = true;
                                    } else {
                                        got.write(buf.array(), 0, n);
                                    }
                                }
                            }
                            sel.close();
                        }
                    }
                    String text = got.toString(StandardCharsets.UTF_8);
                    System.out.println(p[0] + " [" + text.substring(text.indexOf("\r\n\r\n") + 4) + "]");
                }
                case "self" -> {
                    // A server in the program itself, and a client of it.
                    com.sun.net.httpserver.HttpServer s = com.sun.net.httpserver.HttpServer.create(
                        new java.net.InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
                    // The server's answers carry its clock: replay must give the recorded
                    // values over the connections that run live.
                    s.createContext("/", x -> {
                        byte[] out = (p[1] + " " + System.currentTimeMillis())
                            .getBytes(StandardCharsets.UTF_8);
                        x.sendResponseHeaders(200, out.length);
                        try (OutputStream o = x.getResponseBody()) {
                            o.write(out);
                        }
                    });
                    s.start();
                    URI u = URI.create("http://127.0.0.1:" + s.getAddress().getPort() + "/");
                    for (int i = 0; i < 2; i++) {
                        HttpURLConnection c = (HttpURLConnection) u.toURL().openConnection();
                        String body = new String(c.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                        System.out.println("self " + c.getResponseCode() + " [" + body + "]");
                    }
                    // HttpClient, sync and async, to the same server.
                    HttpClient hc = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
                    HttpRequest r = HttpRequest.newBuilder(u).build();
                    System.out.println("self send [" + hc.send(r, HttpResponse.BodyHandlers.ofString()).body() + "]");
                    System.out.println("self async ["
                        + hc.sendAsync(r, HttpResponse.BodyHandlers.ofString()).join().body() + "]");
                    s.stop(0);
                }
                case "post" -> {
                    HttpURLConnection c = (HttpURLConnection) URI.create(p[1]).toURL().openConnection();
                    c.setRequestMethod("POST");
                    c.setDoOutput(true);
                    try (OutputStream o = c.getOutputStream()) {
                        o.write(p[2].getBytes(StandardCharsets.UTF_8));
                    }
                    String body = new String(c.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                    System.out.println("post " + c.getResponseCode() + " [" + body + "]");
                }
                case "send", "async" -> {
                    if (client == null) {
                        client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
                    }
                    HttpRequest r = HttpRequest.newBuilder(URI.create(p[1])).build();
                    try {
                        HttpResponse<String> res = p[0].equals("send")
                            ? client.send(r, HttpResponse.BodyHandlers.ofString())
                            : client.sendAsync(r, HttpResponse.BodyHandlers.ofString()).join();
                        System.out.println(p[0] + " " + res.statusCode() + " [" + res.body() + "] "
                            + res.headers().firstValue("content-length").orElse("-") + " " + res);
                    } catch (java.io.IOException | java.util.concurrent.CompletionException e) {
                        // The exception and its causes, as a program would print them.
                        java.io.StringWriter w = new java.io.StringWriter();
                        e.printStackTrace(new java.io.PrintWriter(w));
                        System.out.println(p[0] + " failed: " + w.toString().lines()
                            .filter(l -> !l.startsWith("\tat ") && !l.startsWith("\t..."))
                            .collect(java.util.stream.Collectors.joining(" / ")));
                    }
                }
                case "dns" -> {
                    try {
                        InetAddress[] all = InetAddress.getAllByName(p[1]);
                        StringBuilder sb = new StringBuilder();
                        for (InetAddress i : all) {
                            sb.append(' ').append(i.getHostAddress());
                        }
                        System.out.println("dns " + p[1] + ":" + sb);
                    } catch (UnknownHostException e) {
                        System.out.println("dns " + p[1] + ": unknown (" + e.getClass().getName() + ")");
                    }
                }
                case "loop" -> {
                    int n = Integer.parseInt(p[1]);
                    long bytes = 0;
                    for (int i = 0; i < n; i++) {
                        HttpURLConnection c = (HttpURLConnection) URI.create(p[2]).toURL().openConnection();
                        bytes += c.getInputStream().readAllBytes().length;
                    }
                    System.out.println("loop " + n + " " + bytes);
                }
                default -> throw new IllegalArgumentException(a);
            }
        }
    }
}

import com.sun.net.httpserver.HttpServer;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;

/**
 * A local HTTP server for the socket tests: `NetServer BODY` serves BODY (and, for a POST,
 * BODY plus what was posted) on a free loopback port, prints the port, and runs until killed
 * or until its stdin closes.
 */
public class NetServer {
    public static void main(String[] args) throws Exception {
        HttpServer s = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        byte[] body = args[0].getBytes(StandardCharsets.UTF_8);
        s.createContext("/", x -> {
            byte[] in = x.getRequestBody().readAllBytes();
            byte[] out = body;
            if (in.length > 0) {
                out = (args[0] + "+" + new String(in, StandardCharsets.UTF_8) + x.getRequestURI())
                    .getBytes(StandardCharsets.UTF_8);
            }
            x.sendResponseHeaders(200, out.length);
            try (OutputStream o = x.getResponseBody()) {
                o.write(out);
            }
        });
        s.start();
        System.out.println(s.getAddress().getPort());
        System.out.flush();
        while (System.in.read() >= 0) {
            // until the test closes our stdin
        }
        s.stop(0);
    }
}

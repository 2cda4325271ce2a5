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
        InetSocketAddress at = new InetSocketAddress(InetAddress.getLoopbackAddress(), 0);
        HttpServer s;
        if (args.length > 2) {
            // TLS: args[1] is a PKCS12 key store, args[2] its password.
            char[] pw = args[2].toCharArray();
            java.security.KeyStore ks = java.security.KeyStore.getInstance("PKCS12");
            try (java.io.InputStream in = new java.io.FileInputStream(args[1])) {
                ks.load(in, pw);
            }
            javax.net.ssl.KeyManagerFactory kmf = javax.net.ssl.KeyManagerFactory.getInstance("SunX509");
            kmf.init(ks, pw);
            javax.net.ssl.SSLContext ctx = javax.net.ssl.SSLContext.getInstance("TLS");
            ctx.init(kmf.getKeyManagers(), null, null);
            com.sun.net.httpserver.HttpsServer hs = com.sun.net.httpserver.HttpsServer.create(at, 0);
            hs.setHttpsConfigurator(new com.sun.net.httpserver.HttpsConfigurator(ctx));
            s = hs;
        } else {
            s = HttpServer.create(at, 0);
        }
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

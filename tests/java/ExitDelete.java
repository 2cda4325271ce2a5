import java.io.File;

/** Creates a file, asks for it to be deleted at exit and prints the time: the delete runs at shutdown. */
public class ExitDelete {
    public static void main(String[] args) throws Exception {
        File f = new File(args[0]);
        System.out.println("created " + f.createNewFile() + " at " + System.currentTimeMillis());
        f.deleteOnExit();
    }
}
